import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Deadline, isAbortError } from '@hourglass/core'
import { ProxyAgent, request } from 'undici'
import { afterEach, expect, it } from 'vitest'
import {
  type ConnectError,
  createFetch,
  type DeadlineDispatchOptions,
  deadlineInterceptor,
  isConnectError,
} from '../src/index.js'
import { type EgressEvents, recordEgress, rejection } from './helpers.js'

// undici's ProxyAgent fails a tunnel the proxy refused (CONNECT answered
// 407 or 403) with a RequestAbortedError: name `AbortError`, code
// UND_ERR_ABORTED. Passed on as it was, it read as the caller's own cancel —
// `err.name === 'AbortError'`, `why: 'aborted'` — though nobody aborted. It
// is a connect failure: ConnectError, `proxyStatus`, never retried (the
// proxy answers the same again).

let closers: (() => Promise<void>)[] = []
let events: EgressEvents | undefined
afterEach(async () => {
  events?.stop()
  events = undefined
  await Promise.all(closers.map((close) => close()))
  closers = []
})

/** A proxy that answers every CONNECT with `status`; counts them. */
async function refusingProxy(
  status: number,
): Promise<{ agent: ProxyAgent; connects: () => number }> {
  let connects = 0
  const proxy: Server = createServer((_req, res) => res.end('not a tunnel'))
  proxy.on('connect', (_req, socket) => {
    connects += 1
    socket.end(`HTTP/1.1 ${status} Refused\r\n\r\n`)
  })
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve))
  const agent = new ProxyAgent({ uri: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}` })
  closers.push(async () => {
    await agent.close()
    proxy.closeAllConnections()
    await new Promise<void>((resolve) => proxy.close(() => resolve()))
  })
  return { agent, connects: () => connects }
}

function expectRefusal(error: unknown, status: number): void {
  expect(isConnectError(error)).toBe(true)
  expect(isAbortError(error)).toBe(false)
  expect((error as ConnectError).proxyStatus).toBe(status)
  expect((error as Error).message).toContain(`the proxy answered CONNECT with ${status}`)
  // undici's own error stays reachable.
  expect(((error as Error).cause as { code?: unknown }).code).toBe('UND_ERR_ABORTED')
}

it.each([407, 403])(
  'createFetch: a proxy that answers CONNECT with %i is a ConnectError, not the caller abort',
  async (status) => {
    events = recordEgress()
    const { agent, connects } = await refusingProxy(status)
    const fetch = createFetch()
    closers.push(() => fetch.close())
    const error = await rejection(
      fetch('https://upstream.test/x', { dispatcher: agent, deadline: Deadline.after(5000) }),
    )
    expectRefusal(error, status)
    expect(connects()).toBe(1)
    expect(events.retries).toEqual([])
    expect(events.skipped).toMatchObject([{ reason: 'CONNECT_FAILED', why: 'not-retryable' }])
    expect(events.ends).toMatchObject([{ errorCode: 'CONNECT_FAILED', phase: 'connect' }])
  },
)

it('deadlineInterceptor over a ProxyAgent: the same refusal, the same error', async () => {
  events = recordEgress()
  const { agent, connects } = await refusingProxy(407)
  const error = await rejection(
    request('https://upstream.test/x', {
      dispatcher: agent.compose(deadlineInterceptor()),
      deadline: Deadline.after(5000),
    } as DeadlineDispatchOptions & Parameters<typeof request>[1]),
  )
  expectRefusal(error, 407)
  expect(connects()).toBe(1)
  expect(events.skipped).toMatchObject([{ reason: 'CONNECT_FAILED', why: 'not-retryable' }])
})
