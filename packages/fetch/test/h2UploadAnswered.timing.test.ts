import type { ServerHttp2Stream } from 'node:http2'
import { Deadline } from '@hourglass/core'
import { request } from 'undici'
import { afterEach, expect, it } from 'vitest'
import { createFetch, deadlineInterceptor } from '../src/index.js'
import { useH2Server } from './h2Server.js'
import { type EgressEvents, recordEgress } from './helpers.js'

// The same as slowUploadAnswered.timing.test.ts, over HTTP/2 (an Agent of the
// caller's with `allowH2`): undici writes a body held in memory to its
// HTTP/2 stream in one write and says it was sent at once, and the session's
// socket, shared by every stream, was never watched — such an upload failed
// as HEADERS_TIMEOUT one limit after it was handed over, the server still
// reading it, and a PUT was sent again, whole. The server reads slowly (at
// PACE) so the upload lasts 150 ms past the limit or more whatever the
// machine's load; the checks are on what the server received and what the
// caller got, never on times.

const LIMIT_MS = 300
/**
 * The stalled upload's limit: there is no upload to outlast, so a shorter
 * limit only ends the wait sooner, and is still far above the few ms the
 * request takes to reach the server.
 */
const STALLED_LIMIT_MS = 150
const DEADLINE_MS = 60_000
/**
 * Bytes the slow reader takes per ms: 4 MB in two LIMIT_MS. Paced by the
 * bytes, not one DATA frame per timer turn: frames of ≤ 16 KB set only a
 * floor (0.5 s for 4 MB), and timer turns made it 1.1 s.
 */
const PACE = (4 * 1024 * 1024) / (2 * LIMIT_MS)
const h2 = useH2Server()
let events: EgressEvents | undefined
afterEach(() => {
  events?.stop()
  events = undefined
})

/** Reads each upload at PACE, and answers 200 with the count once it has all of it. */
function slowReader(received: number[]) {
  return (stream: ServerHttp2Stream) => {
    const at = received.push(0) - 1
    const start = performance.now()
    stream.on('data', (chunk: Buffer) => {
      const got = (received[at] ?? 0) + chunk.length
      received[at] = got
      // No further read before PACE allows: the first n bytes take at least
      // n / PACE ms. Behind it (a loaded machine), read on.
      const ahead = start + got / PACE - performance.now()
      if (ahead < 1) return
      stream.pause()
      setTimeout(() => stream.resume(), ahead)
    })
    stream.on('end', () => {
      stream.respond({ ':status': 200 })
      stream.end(String(received[at]))
    })
  }
}

it('createFetch over HTTP/2: a Buffer upload longer than headersTimeoutMs is answered, sent once', async () => {
  // 3 MB at PACE: ≥ 450 ms, 150 ms past LIMIT_MS.
  const body = Buffer.alloc(3 * 1024 * 1024)
  const received: number[] = []
  const url = await h2.listen(slowReader(received))
  const fetch = createFetch({ dispatcher: h2.agent, headersTimeoutMs: LIMIT_MS })
  events = recordEgress()

  // PUT: an idempotent upload that failed was also sent a second time, whole.
  const res = await fetch(url, { method: 'PUT', body, deadline: Deadline.after(DEADLINE_MS) })

  expect(res.status).toBe(200)
  expect(await res.text()).toBe(String(body.length))
  expect(received).toEqual([body.length])
  expect(events.ends.map((end) => end.errorCode ?? end.statusCode)).toEqual([200])
  expect(events.retries).toEqual([])
}, 60_000)

it('deadlineInterceptor over HTTP/2: a Buffer upload longer than headersTimeoutMs is answered, sent once', async () => {
  const body = Buffer.alloc(3 * 1024 * 1024)
  const received: number[] = []
  const url = await h2.listen(slowReader(received))
  const dispatcher = h2.agent.compose(deadlineInterceptor({ headersTimeoutMs: LIMIT_MS }))
  events = recordEgress()

  const res = await request(url, {
    method: 'PUT',
    body,
    dispatcher,
    deadline: Deadline.after(DEADLINE_MS),
  } as Parameters<typeof request>[1])

  expect(res.statusCode).toBe(200)
  expect(await res.body.text()).toBe(String(body.length))
  expect(received).toEqual([body.length])
  expect(events.ends.map((end) => end.errorCode ?? end.statusCode)).toEqual([200])
  expect(events.retries).toEqual([])
}, 60_000)

it('an HTTP/2 upload the server stopped reading still fails with HEADERS_TIMEOUT', async () => {
  const body = Buffer.alloc(1024 * 1024)
  let streams = 0
  // Reads nothing of the body (its flow-control window fills), and never answers.
  const url = await h2.listen((stream) => {
    streams++
    stream.pause()
  })
  const fetch = createFetch({ dispatcher: h2.agent, headersTimeoutMs: STALLED_LIMIT_MS })
  events = recordEgress()

  const failure = await fetch(url, {
    method: 'POST',
    body,
    deadline: Deadline.after(DEADLINE_MS),
  }).catch((error: unknown) => error)

  expect(failure).toMatchObject({ code: 'HEADERS_TIMEOUT' })
  expect(streams).toBe(1)
  expect(events.ends.map((end) => [end.errorCode, end.phase])).toEqual([
    ['HEADERS_TIMEOUT', 'headers'],
  ])
}, 60_000)
