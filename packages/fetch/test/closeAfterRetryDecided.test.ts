import { once } from 'node:events'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, expect, it } from 'vitest'
import { createFetch, fetchChannels } from '../src/index.js'
import { type EgressEvents, recordEgress } from './helpers.js'

// fetch.close() after a retry at once (no Retry-After) was decided, before it
// was sent: the retry went to the closed Agent. An `attempt` 2 with its
// retryReason was announced (otel counts it a retry made), it ended
// UND_ERR_CLOSED, and the caller got undici's bare "The client is closed"
// in place of the 503 — where a retry with a Retry-After wait is ended by
// close() as `aborted`, nothing announced as sent.

let server: Server | undefined
let events: EgressEvents | undefined
afterEach(async () => {
  events?.stop()
  events = undefined
  if (server) {
    server.closeAllConnections()
    server.close()
    await once(server, 'close')
  }
  server = undefined
})

it('fetch.close() between a retry at once and its send: no attempt is announced for it, the skipped retry says aborted', async () => {
  let requests = 0
  server = createServer((_req, res) => {
    requests++
    res.statusCode = 503
    res.end('busy')
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
  const fetch = createFetch({ retry: { statuses: [503] } })
  events = recordEgress()
  let closing: Promise<void> | undefined
  // A shutdown landing in the window (a few microtasks): from the retry event itself.
  const onRetry = () => {
    closing ??= fetch.close()
  }
  fetchChannels.retry.subscribe(onRetry)
  let error: unknown
  try {
    error = await fetch(url).then(
      () => undefined,
      (e: unknown) => e,
    )
  } finally {
    fetchChannels.retry.unsubscribe(onRetry)
    await closing
  }
  expect(error).toMatchObject({
    code: 'UND_ERR_CLOSED',
    message: expect.stringMatching(/fetch\.close\(\)/),
  })
  expect(requests).toBe(1)
  expect(events.attempts.map((a) => a.attempt)).toEqual([1])
  expect(events.skipped).toMatchObject([{ attempt: 1, reason: 'HTTP_503', why: 'aborted' }])
})
