import type { Clock } from '@hourglass/core'
import { closedPort, type FaultServer, faultServer } from '@hourglass/testkit'
import { Agent, request } from 'undici'
import { describe, expect, it } from 'vitest'
import { createConnector, createFetch, deadlineInterceptor } from '../src/index.js'
import { type EgressEvents, rejection } from './helpers.js'
import { frozenClock } from './support/frozenClock.js'
import { useCleanup } from './support/useCleanup.js'

// Per-call retry rules go field by field over the factory's. A factory's
// `retry: false` is every rule off, so a call that turns one rule on
// (`retry: { statuses: [503] }`) gets that rule alone. It brought back the
// default rules the factory had turned off — `fastConnectFailure: true` and
// `emptyRead: 'idempotent'`: a GET whose connection closed before any answer
// was sent again, and a refused connect tried twice.

const cleanup = useCleanup()
let events: EgressEvents | undefined

async function serve(plan: Parameters<typeof faultServer>[0]): Promise<FaultServer> {
  const server = await faultServer(plan)
  cleanup.keep(server)
  return server
}
// A refused connect measured as fast: see support/frozenClock.ts.
const frozen = frozenClock
function client(options: { clock?: Clock } = {}) {
  const fetch = createFetch({ retry: false, ...options })
  cleanup.keep(fetch)
  return fetch
}
function interceptor() {
  const base = new Agent({ connect: createConnector() })
  cleanup.keep(base)
  return base.compose(deadlineInterceptor({ retry: false }))
}
const closeThenAnswer = (_req: unknown, index: number) =>
  index === 0 ? ({ type: 'close' } as const) : ({ type: 'respond', body: 'second' } as const)
const busyThenAnswer = (_req: unknown, index: number) =>
  index === 0
    ? ({ type: 'respond', status: 503 } as const)
    : ({ type: 'respond', body: 'ok' } as const)

describe('createFetch({ retry: false }) with a per-call retry: { statuses: [503] }', () => {
  it('retries the 503 it asked for', async () => {
    const server = await serve(busyThenAnswer)
    const res = await client()(server.url, { retry: { statuses: [503] } })
    expect(await res.text()).toBe('ok')
    expect(server.records).toHaveLength(2)
  })

  it('does not bring back emptyRead: a GET whose connection closed before any answer is not sent again', async () => {
    events = cleanup.record()
    const server = await serve(closeThenAnswer)
    const error = await rejection(client()(server.url, { retry: { statuses: [503] } }))
    expect(error).toMatchObject({ code: 'UND_ERR_SOCKET' })
    expect(server.records).toHaveLength(1)
    expect(events.skipped).toMatchObject([{ reason: 'UND_ERR_SOCKET', why: 'retry-disabled' }])
  })

  it('does not bring back fastConnectFailure: a refused connect is tried once', async () => {
    events = cleanup.record()
    const port = await closedPort()
    // Measured on a clock that stands still (real timers), the refused
    // connect is fast, so the rule alone decides. Measured in real time, a
    // loaded box reported it 50 ms or more after the connect began: slow, so
    // never retried whatever the rules (`slow-connect-failure`, seen in a
    // run of four workers on two cores), and the rule went untested.
    const error = await rejection(
      client({ clock: frozen })(`http://127.0.0.1:${port}/`, { retry: { statuses: [503] } }),
    )
    expect(error).toMatchObject({ code: 'CONNECT_FAILED' })
    expect(events.retries).toEqual([])
    expect(events.skipped).toMatchObject([{ why: 'retry-disabled' }])
  })

  it('a rule the call names is on: emptyRead too', async () => {
    const server = await serve(closeThenAnswer)
    const res = await client()(server.url, { retry: { emptyRead: 'idempotent' } })
    expect(await res.text()).toBe('second')
  })
})

describe('deadlineInterceptor({ retry: false }): the same', () => {
  it('a per-call statuses retries the 503, and brings back no other rule', async () => {
    const dispatcher = interceptor()
    const busy = await serve(busyThenAnswer)
    const res = await request(busy.url, { dispatcher, retry: { statuses: [503] } } as never)
    expect(await res.body.text()).toBe('ok')
    expect(busy.records).toHaveLength(2)
    const closing = await serve(closeThenAnswer)
    const error = await rejection(
      request(closing.url, { dispatcher, retry: { statuses: [503] } } as never),
    )
    expect(error).toMatchObject({ code: 'UND_ERR_SOCKET' })
    expect(closing.records).toHaveLength(1)
  })
})
