import type { ServerHttp2Stream } from 'node:http2'
import { Deadline } from '@hourglass/core'
import { expect, it } from 'vitest'
import { createFetch, isHeadersTimeout } from '../src/index.js'
import { useH2Server } from './h2Server.js'
import { rejection } from './helpers.js'

// The README's limit: over HTTP/2 an interim response (1xx) is not seen.
// undici reads only a stream's final answer ('response'); Node reports a
// 1xx on the stream's 'headers' event, which undici does not listen to, so
// the headers limit counts from the request whatever 102s the server sends,
// and a failure after one is judged as before any byte. Reaching the stream
// for every HTTP/2 request would cost every HTTP/1.1 request too. If the
// first test starts failing, undici (or hourglass) sees the 1xx now: the
// README's Limits entry is to go, as for HTTP/1.1 (interimResponse.timing.test.ts).

const LIMIT_MS = 180
/**
 * The server's 102s come this often, a sixth of the limit: 150 ms inside it,
 * so were the 102s seen, a late timer would not outlast the limit between two.
 */
const EVERY_MS = 30
const h2 = useH2Server()

/** Sends a 102 every `everyMs`; answers 200 after `interims` of them (never if `Infinity`). Counts the requests as `method`. */
function processing(interims: number, requests: string[], method: string, everyMs = EVERY_MS) {
  return (stream: ServerHttp2Stream) => {
    requests.push(method)
    let sent = 0
    const timer = setInterval(() => {
      if (stream.destroyed || stream.headersSent) return
      if (sent++ < interims) {
        stream.additionalHeaders({ ':status': 102 })
        return
      }
      clearInterval(timer)
      stream.respond({ ':status': 200 })
      stream.end('done')
    }, everyMs)
    stream.on('close', () => clearInterval(timer))
  }
}

it('over HTTP/2 a 102 every sixth of headersTimeoutMs does not restart it: HEADERS_TIMEOUT, and the GET is sent again (the documented limit)', async () => {
  const requests: string[] = []
  const url = await h2.listen(processing(Number.POSITIVE_INFINITY, requests, 'GET'))
  const fetch = createFetch({ dispatcher: h2.agent, headersTimeoutMs: LIMIT_MS })

  const error = await rejection(fetch(url, { deadline: Deadline.after(60_000) }))

  expect(isHeadersTimeout(error)).toBe(true)
  expect(requests).toEqual(['GET', 'GET'])
}, 60_000)

it('over HTTP/2, headersTimeoutMs above the final answer (the README advice): a POST with an Idempotency-Key after 102s is answered, sent once', async () => {
  const requests: string[] = []
  // A 30 s limit, far from any answer here: how far apart the 102s come
  // proves nothing, and 10 ms apart they end the test sooner.
  const url = await h2.listen(processing(6, requests, 'POST', 10))
  const fetch = createFetch({ dispatcher: h2.agent, headersTimeoutMs: 30_000 })

  const res = await fetch(url, {
    method: 'POST',
    body: 'job',
    headers: { 'idempotency-key': 'k-1' },
    deadline: Deadline.after(60_000),
  })

  expect(res.status).toBe(200)
  expect(await res.text()).toBe('done')
  expect(requests).toEqual(['POST'])
}, 60_000)
