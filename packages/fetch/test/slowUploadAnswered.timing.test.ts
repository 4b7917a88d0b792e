import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Deadline } from '@hourglass/core'
import { Agent, request } from 'undici'
import { afterEach, expect, it } from 'vitest'
import { createFetch, deadlineInterceptor, type HourglassFetch } from '../src/index.js'
import { type EgressEvents, recordEgress } from './helpers.js'

// An upload held in memory (a Buffer) is one `socket.write` in undici, which
// reports it sent at once: the headers limit then ran from that moment, and
// an upload longer than `headersTimeoutMs` failed as HEADERS_TIMEOUT with the
// server still reading it. The limit now sees the upload leave Node's buffer
// (Attempt.watchSocket). The servers read slowly — pause and resume the
// request on a timer, at PACE — so the upload lasts 150 ms past the limit or
// more whatever the machine's load; the checks are on what the server
// received and what the caller got, never on times. The kernel's buffers hold what
// Node has handed them out of its sight (several MB on TCP loopback, a few
// hundred KB on a Unix socket), and the limit counts the server's silence
// once the last byte has left Node: the TCP server reads the last 12 MB at
// full speed, the Unix socket's reads slowly to the end.

const LIMIT_MS = 300
/**
 * The stalled upload's limit: there is no upload to outlast, so a shorter
 * limit only ends the wait sooner, and is still far above the few ms the
 * request takes to reach the server.
 */
const STALLED_LIMIT_MS = 150
const DEADLINE_MS = 60_000
/**
 * Bytes a slow reader takes per ms: 4 MB per LIMIT_MS. Paced by the bytes,
 * not one chunk per timer turn: a socket's chunks run from a few KB to
 * 64 KB, so a pace per chunk set only a floor (12 MB in 64 KB chunks) and
 * the upload took twice that, the test's time with it.
 */
const PACE = (4 * 1024 * 1024) / LIMIT_MS

let server: Server | undefined
let events: EgressEvents | undefined
let fetch: HourglassFetch | undefined
let agent: Agent | undefined

afterEach(async () => {
  events?.stop()
  await fetch?.close()
  await agent?.destroy()
  server?.closeAllConnections()
  await new Promise((resolve) => server?.close(resolve))
  server = events = fetch = agent = undefined
})

interface Reads {
  requests: number
  /** Bytes of the body received, by request, in arrival order. */
  received: number[]
}

/** Reads each request's body at PACE until `fastFrom` bytes, then at full speed; answers 200 with the count. */
function slowReader(fastFrom: number, reads: Reads) {
  return (req: IncomingMessage, res: ServerResponse) => {
    const at = reads.requests++
    reads.received[at] = 0
    const start = performance.now()
    req.on('data', (chunk: Buffer) => {
      const received = (reads.received[at] ?? 0) + chunk.length
      reads.received[at] = received
      if (received >= fastFrom) return
      // No further read before PACE allows: the first n bytes take at least
      // n / PACE ms however big the chunks. Behind it (a loaded machine), read on.
      const ahead = start + received / PACE - performance.now()
      if (ahead < 1) return
      req.pause()
      setTimeout(() => req.resume(), ahead)
    })
    req.on('end', () => res.end(String(reads.received[at])))
    req.on('error', () => {})
  }
}

async function listenTcp(handler: Parameters<typeof createServer>[1]): Promise<string> {
  server = createServer(handler)
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/upload`
}

async function listenUnix(handler: Parameters<typeof createServer>[1]): Promise<string> {
  const path = join(tmpdir(), `hourglass-upload-${process.pid}-${Date.now()}.sock`)
  server = createServer(handler)
  await new Promise<void>((resolve) => server?.listen(path, resolve))
  return path
}

it('createFetch: a Buffer upload longer than headersTimeoutMs is answered, sent once', async () => {
  const body = Buffer.alloc(18 * 1024 * 1024)
  const reads: Reads = { requests: 0, received: [] }
  // 6 MB at PACE (≥ 450 ms, 150 ms past LIMIT_MS), the last 12 MB at once:
  // more than loopback's buffers hold, so Node still holds bytes while the
  // server reads slowly.
  const url = await listenTcp(slowReader(6 * 1024 * 1024, reads))
  fetch = createFetch({ headersTimeoutMs: LIMIT_MS })
  events = recordEgress()

  // PUT: an idempotent upload that failed was also sent a second time, whole.
  const res = await fetch(url, { method: 'PUT', body, deadline: Deadline.after(DEADLINE_MS) })

  expect(res.status).toBe(200)
  expect(await res.text()).toBe(String(body.length))
  expect(reads.received).toEqual([body.length])
  expect(events.ends.map((end) => end.errorCode ?? end.statusCode)).toEqual([200])
  expect(events.retries).toEqual([])
}, 60_000)

it('deadlineInterceptor: a Buffer upload longer than headersTimeoutMs is answered, sent once', async () => {
  const body = Buffer.alloc(6 * 1024 * 1024)
  const reads: Reads = { requests: 0, received: [] }
  // At PACE to the end: 6 MB take ≥ 450 ms, 150 ms past LIMIT_MS.
  const socketPath = await listenUnix(slowReader(Number.POSITIVE_INFINITY, reads))
  agent = new Agent({ connect: { socketPath }, headersTimeout: 0, bodyTimeout: 0 })
  const dispatcher = agent.compose(deadlineInterceptor({ headersTimeoutMs: LIMIT_MS }))
  events = recordEgress()

  const res = await request('http://localhost/upload', {
    method: 'PUT',
    body,
    dispatcher,
    deadline: Deadline.after(DEADLINE_MS),
  } as Parameters<typeof request>[1])

  expect(res.statusCode).toBe(200)
  expect(await res.body.text()).toBe(String(body.length))
  expect(reads.received).toEqual([body.length])
  expect(events.ends.map((end) => end.errorCode ?? end.statusCode)).toEqual([200])
  expect(events.retries).toEqual([])
}, 60_000)

it('an upload the server stopped reading still fails with HEADERS_TIMEOUT', async () => {
  const body = Buffer.alloc(18 * 1024 * 1024)
  let requests = 0
  // Reads nothing of the body, and never answers.
  const url = await listenTcp((req) => {
    requests++
    req.pause()
    req.on('error', () => {})
  })
  fetch = createFetch({ headersTimeoutMs: STALLED_LIMIT_MS })
  events = recordEgress()

  const failure = await fetch(url, {
    method: 'POST',
    body,
    deadline: Deadline.after(DEADLINE_MS),
  }).catch((error: unknown) => error)

  expect(failure).toMatchObject({ code: 'HEADERS_TIMEOUT' })
  expect(requests).toBe(1)
  expect(events.ends.map((end) => [end.errorCode, end.phase])).toEqual([
    ['HEADERS_TIMEOUT', 'headers'],
  ])
}, 60_000)
