import { constants } from 'node:http2'
import { Deadline } from '@hourglass/core'
import { request } from 'undici'
import { afterEach, expect, it } from 'vitest'
import { createFetch, deadlineInterceptor } from '../src/index.js'
import { useH2Server } from './h2Server.js'
import { type EgressEvents, recordEgress } from './helpers.js'

// An HTTP/2 server that resets a stream with REFUSED_STREAM says it did not
// process the request (RFC 9113 §8.7): it can be sent again, whatever its
// method. Node fails such a request with ERR_HTTP2_STREAM_ERROR, which the
// retry rules did not know: it was never retried, not even a GET.

const h2 = useH2Server()
let events: EgressEvents | undefined
afterEach(() => {
  events?.stop()
  events = undefined
})

/** Resets the first stream with `code`, answers the next ones 200; `streams` counts them. */
async function resetFirst(code: number, seen: { streams: number }): Promise<string> {
  return h2.listen((stream) => {
    if (seen.streams++ === 0) {
      stream.close(code)
      return
    }
    stream.respond({ ':status': 200 })
    stream.end('ok')
  })
}

it('createFetch: a POST whose stream is refused is sent again, once', async () => {
  const seen = { streams: 0 }
  const url = await resetFirst(constants.NGHTTP2_REFUSED_STREAM, seen)
  const fetch = createFetch({ dispatcher: h2.agent })
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
  const dispatcher = h2.agent.compose(deadlineInterceptor({}))
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
  const fetch = createFetch({ dispatcher: h2.agent })
  events = recordEgress()

  const failure = await fetch(url, { deadline: Deadline.after(5000) }).catch((error) => error)

  expect(failure).toMatchObject({ code: 'ERR_HTTP2_STREAM_ERROR' })
  expect(seen.streams).toBe(1)
  expect(events.skipped.map((skip) => [skip.reason, skip.why])).toEqual([
    ['ERR_HTTP2_STREAM_ERROR', 'not-retryable'],
  ])
})

// A factory's `retry: false` is every rule off, the refused stream's too (no
// retry key names it): a call's own `retry: { statuses: [503] }` over it
// turns on that rule alone. It turned the refused-stream rule back on, any
// method: a POST was sent twice by a fetch built not to retry.
it('createFetch({ retry: false }): a call retrying 503s does not send a refused stream again', async () => {
  const seen = { streams: 0 }
  const url = await resetFirst(constants.NGHTTP2_REFUSED_STREAM, seen)
  const fetch = createFetch({ dispatcher: h2.agent, retry: false })
  events = recordEgress()

  const failure = await fetch(url, {
    method: 'POST',
    body: 'order',
    retry: { statuses: [503] },
    deadline: Deadline.after(5000),
  }).catch((error) => error)

  expect(failure).toMatchObject({ code: 'ERR_HTTP2_STREAM_ERROR' })
  expect(seen.streams).toBe(1)
  expect(events.skipped.map((skip) => [skip.reason, skip.why])).toEqual([
    ['ERR_HTTP2_STREAM_ERROR', 'retry-disabled'],
  ])
})

it('deadlineInterceptor({ retry: false }): a dispatch retrying 503s does not send a refused stream again', async () => {
  const seen = { streams: 0 }
  const url = await resetFirst(constants.NGHTTP2_REFUSED_STREAM, seen)
  const dispatcher = h2.agent.compose(deadlineInterceptor({ retry: false }))
  events = recordEgress()

  const failure = await request(url, {
    dispatcher,
    deadline: Deadline.after(5000),
    retry: { statuses: [503] },
  } as Parameters<typeof request>[1]).catch((error) => error)

  expect(failure).toMatchObject({ code: 'ERR_HTTP2_STREAM_ERROR' })
  expect(seen.streams).toBe(1)
})

it('a call retrying 503s over the default rules still sends a refused stream again', async () => {
  const seen = { streams: 0 }
  const url = await resetFirst(constants.NGHTTP2_REFUSED_STREAM, seen)
  const fetch = createFetch({ dispatcher: h2.agent })

  const res = await fetch(url, { retry: { statuses: [503] }, deadline: Deadline.after(5000) })

  expect(res.status).toBe(200)
  expect(seen.streams).toBe(2)
})
