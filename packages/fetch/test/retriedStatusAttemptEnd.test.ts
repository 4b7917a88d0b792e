import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { Deadline } from '@hourglass/core'
import { type FaultServer, faultServer } from '@hourglass/testkit'
import { Agent, request } from 'undici'
import { afterEach, expect, it } from 'vitest'
import { createConnector, createFetch, deadlineInterceptor } from '../src/index.js'
import { type EgressEvents, recordEgress } from './helpers.js'

// A listed status (503 here) is retried: createFetch cancels the answer's
// body and sends again. Its attempt was ended by that cancel, so when the
// body was still arriving (anything beyond what came with the headers) its
// `attempt-end` said `errorCode: 'AbortError', phase: 'body'` — an errored
// egress span, `error.type` AbortError, for an answer that was a 503 and was
// retried — where the interceptor's said `statusCode: 503` and nothing else.
// The 503 here streams its body slowly, so it is never whole when the retry
// is decided; the test waits on no timer.

let closers: { close(): Promise<void> }[] = []
let events: EgressEvents | undefined
afterEach(async () => {
  events?.stop()
  events = undefined
  await Promise.all(closers.map((c) => c.close()))
  closers = []
})

async function busyOnce(): Promise<FaultServer> {
  const server = await faultServer((_r, i) =>
    i === 0
      ? { type: 'stream', status: 503, chunks: 500, intervalMs: 20 }
      : { type: 'respond', body: 'ok' },
  )
  closers.push(server)
  return server
}

const retry = { statuses: [503] }

it("createFetch: the retried 503's attempt ends with its status, not as an error", async () => {
  const server = await busyOnce()
  const fetch = createFetch({ retry })
  closers.push(fetch)
  events = recordEgress()
  using deadline = Deadline.after(30_000)
  const res = await fetch(server.url, { deadline })
  expect(await res.text()).toBe('ok')

  expect(events.retries.map((m) => m.reason)).toEqual(['HTTP_503'])
  expect(
    events.ends.map(({ attempt, statusCode, errorCode, phase }) => ({
      attempt,
      statusCode,
      errorCode,
      phase,
    })),
  ).toEqual([
    { attempt: 1, statusCode: 503, errorCode: undefined, phase: undefined },
    { attempt: 2, statusCode: 200, errorCode: undefined, phase: undefined },
  ])
})

it('the interceptor reports the same retried 503 the same way (the control)', async () => {
  const server = await busyOnce()
  const agent = new Agent({ connect: createConnector(), headersTimeout: 0, bodyTimeout: 0 })
  closers.push(agent)
  events = recordEgress()
  using deadline = Deadline.after(30_000)
  const res = await request(server.url, {
    dispatcher: agent.compose(deadlineInterceptor({ retry })),
    deadline,
  } as never)
  expect(await res.body.text()).toBe('ok')

  expect(
    events.ends.map(({ attempt, statusCode, errorCode }) => ({ attempt, statusCode, errorCode })),
  ).toEqual([
    { attempt: 1, statusCode: 503, errorCode: undefined },
    { attempt: 2, statusCode: 200, errorCode: undefined },
  ])
})

// The same cancel must still reach the connection. Ended first (above), the
// attempt no longer passed fetch's cancel on to undici: the 503's body was
// left unread on its socket, held with no deadline to end it — a connection
// lost per retried 503 that did not fit in one read, and `fetch.close()`
// waiting on it for ever.
it("createFetch: the retried 503's connection is closed, not held with its body unread", async () => {
  let first: Socket | undefined
  const server = createServer((req, res) => {
    if (first) return void res.end('ok')
    first = req.socket
    res.writeHead(503)
    res.write(Buffer.alloc(1 << 20)) // more than one read, and never ended
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  closers.push({
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  })
  const fetch = createFetch({ retry })
  closers.push(fetch)
  const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`)
  expect(await res.text()).toBe('ok')
  const socket = first as Socket
  if (!socket.destroyed) await once(socket, 'close') // never, before: the test timed out
  await fetch.close()
  expect(socket.destroyed).toBe(true)
}, 3000)
