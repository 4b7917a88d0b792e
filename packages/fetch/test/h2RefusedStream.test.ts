import { readFileSync } from 'node:fs'
import {
  constants,
  createSecureServer,
  type Http2SecureServer,
  type Http2Session,
  type ServerHttp2Stream,
} from 'node:http2'
import type { AddressInfo } from 'node:net'
import { Deadline } from '@hourglass/core'
import { Agent, request } from 'undici'
import { afterEach, expect, it } from 'vitest'
import { createFetch, deadlineInterceptor } from '../src/index.js'
import { type EgressEvents, recordEgress } from './helpers.js'

// An HTTP/2 server that resets a stream with REFUSED_STREAM says it did not
// process the request (RFC 9113 §8.7): it can be sent again, whatever its
// method. Node fails such a request with ERR_HTTP2_STREAM_ERROR, which the
// retry rules did not know: it was never retried, not even a GET.

// A self-signed certificate for svc.test, other.test and 127.0.0.1.
const cert = readFileSync(new URL('./fixtures/svc.test.cert.pem', import.meta.url))
const key = readFileSync(new URL('./fixtures/svc.test.key.pem', import.meta.url))

let server: Http2SecureServer | undefined
let agent: Agent | undefined
let events: EgressEvents | undefined
const sessions = new Set<Http2Session>()

afterEach(async () => {
  events?.stop()
  await agent?.destroy()
  for (const session of sessions) session.destroy()
  sessions.clear()
  await new Promise((resolve) => server?.close(resolve))
  server = agent = events = undefined
})

/** Resets the first stream with `code`, answers the next ones 200; `streams` counts them. */
async function resetFirst(code: number, seen: { streams: number }): Promise<string> {
  server = createSecureServer({ key, cert })
  server.on('session', (session) => sessions.add(session))
  server.on('stream', (stream: ServerHttp2Stream) => {
    stream.on('error', () => {})
    if (seen.streams++ === 0) {
      stream.close(code)
      return
    }
    stream.respond({ ':status': 200 })
    stream.end('ok')
  })
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve))
  agent = new Agent({ allowH2: true, connect: { ca: cert }, headersTimeout: 0, bodyTimeout: 0 })
  return `https://127.0.0.1:${(server.address() as AddressInfo).port}/`
}

it('createFetch: a POST whose stream is refused is sent again, once', async () => {
  const seen = { streams: 0 }
  const url = await resetFirst(constants.NGHTTP2_REFUSED_STREAM, seen)
  const fetch = createFetch({ dispatcher: agent as Agent })
  events = recordEgress()

  const res = await fetch(url, { method: 'POST', body: 'order', deadline: Deadline.after(5000) })

  expect(res.status).toBe(200)
  expect(await res.text()).toBe('ok')
  expect(seen.streams).toBe(2)
  expect(events.retries.map((retry) => retry.reason)).toEqual(['ERR_HTTP2_STREAM_ERROR'])
  expect(events.skipped).toEqual([])
})

it('deadlineInterceptor: a GET whose stream is refused is sent again, once', async () => {
  const seen = { streams: 0 }
  const url = await resetFirst(constants.NGHTTP2_REFUSED_STREAM, seen)
  const dispatcher = (agent as Agent).compose(deadlineInterceptor({}))
  events = recordEgress()

  const res = await request(url, { dispatcher, deadline: Deadline.after(5000) } as Parameters<
    typeof request
  >[1])

  expect(res.statusCode).toBe(200)
  expect(await res.body.text()).toBe('ok')
  expect(seen.streams).toBe(2)
  expect(events.retries.map((retry) => retry.reason)).toEqual(['ERR_HTTP2_STREAM_ERROR'])
})

it('another stream error (INTERNAL_ERROR: the server may have acted) is not retried', async () => {
  const seen = { streams: 0 }
  const url = await resetFirst(constants.NGHTTP2_INTERNAL_ERROR, seen)
  const fetch = createFetch({ dispatcher: agent as Agent })
  events = recordEgress()

  const failure = await fetch(url, { deadline: Deadline.after(5000) }).catch((error) => error)

  expect(failure).toMatchObject({ code: 'ERR_HTTP2_STREAM_ERROR' })
  expect(seen.streams).toBe(1)
  expect(events.skipped.map((skip) => [skip.reason, skip.why])).toEqual([
    ['ERR_HTTP2_STREAM_ERROR', 'not-retryable'],
  ])
})
