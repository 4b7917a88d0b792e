import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Deadline } from '@hourglass/core'
import { Agent, request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import {
  createConnector,
  createFetch,
  type DeadlineDispatchOptions,
  deadlineInterceptor,
  isHeadersTimeout,
} from '../src/index.js'
import { type EgressEvents, recordEgress, rejection } from './helpers.js'

// A 1xx (102 Processing, 103 Early Hints) is the server's first byte: it has
// the request and is working on it. The headers limit bounds the server's
// silence, so each 1xx restarts it (as undici restarts its own headers
// timer), and whatever fails after one is past the first byte — never sent
// again. Before, a long job that reported progress with 102s was cut at the
// limit and its POST (with an Idempotency-Key) sent a second time.

const LIMIT_MS = 160
/**
 * The server's interims come this often: 150 ms inside the limit, so a
 * late timer on a loaded machine does not outlast it between two interims.
 */
const EVERY_MS = 10
/**
 * The final answer comes in the INTERIMS-th turn, 320 ms after the request:
 * 160 ms past the limit counted from the request (160 ms), and 150 ms past
 * the limit counted from the first interim (170 ms), so a limit that no
 * interim, or only the first, restarts still fails the test.
 */
const INTERIMS = 32

let closers: (() => Promise<void>)[] = []
let events: EgressEvents | undefined
afterEach(async () => {
  events?.stop()
  events = undefined
  await Promise.all(closers.map((close) => close()))
  closers = []
})

type Interim = (res: ServerResponse) => void
const processing: Interim = (res) => res.writeProcessing()
const earlyHints: Interim = (res) => res.writeEarlyHints({ link: '</a.css>; rel=preload' })

/** A server whose handler is `handle`; counts the requests it received. */
async function serve(
  handle: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<{ url: string; received: () => number }> {
  let received = 0
  const server: Server = createServer((req, res) => {
    received += 1
    req.resume()
    req.on('end', () => handle(req, res))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  closers.push(async () => {
    server.closeAllConnections()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  })
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/job`,
    received: () => received,
  }
}

/** A long job: an interim every EVERY_MS, the final 200 in the INTERIMS-th turn (longer than the limit). */
function slowJob(interim: Interim) {
  return (_req: IncomingMessage, res: ServerResponse) => {
    let sent = 0
    const timer = setInterval(() => {
      if (res.destroyed) return
      if (++sent < INTERIMS) {
        interim(res)
        return
      }
      clearInterval(timer)
      res.end('done')
    }, EVERY_MS)
    res.on('close', () => clearInterval(timer))
  }
}

function ownFetch() {
  const fetch = createFetch({ headersTimeoutMs: LIMIT_MS })
  closers.push(() => fetch.close())
  return fetch
}

function interceptorAgent() {
  const options = { headersTimeoutMs: LIMIT_MS }
  const agent = new Agent({ connect: createConnector(options), headersTimeout: 0, bodyTimeout: 0 })
  closers.push(() => agent.close())
  return agent.compose(deadlineInterceptor(options))
}

const job = {
  method: 'POST',
  body: '{"charge":10}',
  headers: { 'idempotency-key': 'job-1' },
} as const

describe.each([
  ['102 Processing', processing],
  ['103 Early Hints', earlyHints],
])('each %s restarts the headers limit', (_name, interim) => {
  it('createFetch: the job is answered 200 and received once', async () => {
    const server = await serve(slowJob(interim))
    const response = await ownFetch()(server.url, { ...job, deadline: Deadline.after(10_000) })
    expect(response.status).toBe(200)
    expect(await response.text()).toBe('done')
    expect(server.received()).toBe(1)
  })

  it('deadlineInterceptor: the job is answered 200 and received once', async () => {
    const server = await serve(slowJob(interim))
    const response = await request(server.url, {
      ...job,
      dispatcher: interceptorAgent(),
      deadline: Deadline.after(10_000),
    } as DeadlineDispatchOptions & Parameters<typeof request>[1])
    expect(response.statusCode).toBe(200)
    expect(await response.body.text()).toBe('done')
    expect(server.received()).toBe(1)
  })
})

// A GET is safe to repeat: before, these failures counted as "0 bytes" and
// were retried once, the server receiving the request twice.
const afterInterim: [string, (req: IncomingMessage, res: ServerResponse) => void, string][] = [
  // "other side closed": the stale keep-alive race's evidence, but after a 102.
  [
    'the connection closed after a 102',
    (_req, res) => {
      res.writeProcessing()
      res.socket?.end()
    },
    'UND_ERR_SOCKET',
  ],
  // Silent after the 102 for longer than the limit: its end is not "0 bytes".
  ['the headers limit ending after a 102', (_req, res) => res.writeProcessing(), 'HEADERS_TIMEOUT'],
]

describe.each(afterInterim)('%s is not retried', (_name, handle, reason) => {
  it('createFetch', async () => {
    events = recordEgress()
    const server = await serve(handle)
    const error = await rejection(ownFetch()(server.url, { deadline: Deadline.after(10_000) }))
    if (reason === 'HEADERS_TIMEOUT') expect(isHeadersTimeout(error)).toBe(true)
    expect(server.received()).toBe(1)
    expect(events.retries).toEqual([])
    expect(events.skipped).toMatchObject([{ reason, why: 'after-first-byte' }])
  })

  it('deadlineInterceptor', async () => {
    events = recordEgress()
    const server = await serve(handle)
    const error = await rejection(
      request(server.url, {
        dispatcher: interceptorAgent(),
        deadline: Deadline.after(10_000),
      } as DeadlineDispatchOptions & Parameters<typeof request>[1]),
    )
    if (reason === 'HEADERS_TIMEOUT') expect(isHeadersTimeout(error)).toBe(true)
    expect(server.received()).toBe(1)
    expect(events.retries).toEqual([])
    expect(events.skipped).toMatchObject([{ reason, why: 'after-first-byte' }])
  })
})
