import { afterEach, expect, it } from 'vitest'
import {
  type FakeProvider,
  openAIErrors,
  reply,
  startFakeProvider,
} from '../../src/providers/index.js'

/**
 * A path no API answers is the provider's 404, as docs/providers.md says —
 * whatever the test scripted. A queued error (or a rate-limit window) used
 * to go out on any path: a client posting to `/v1/chat/completion` got the
 * 429 its test enqueued, passed a test the real API would have answered
 * 404, and used up the reply meant for the request after it.
 */
let fake: FakeProvider | undefined
afterEach(async () => {
  await fake?.close()
  fake = undefined
})

const post = (url: string) =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
  })

it('a scripted error is not sent to a path no API answers, nor used up by it', async () => {
  fake = await startFakeProvider()
  fake.enqueue(openAIErrors.rateLimited(), reply.hang())
  const typo = await post(`${fake.baseURL}/chat/completion`)
  expect(typo.status).toBe(404)
  expect(await typo.json()).toEqual({
    error: {
      message: 'Invalid URL (POST /v1/chat/completion)',
      type: 'invalid_request_error',
      param: null,
      code: null,
    },
  })
  expect(fake.queuedReplies).toBe(2)
  expect(fake.requests[0]).toMatchObject({ route: 'unknown', reply: undefined, outcome: 'error' })
  // The scripted 429 is still there for the right path.
  expect((await post(`${fake.baseURL}/chat/completions`)).status).toBe(429)
})

it('nor does a rate-limit window answer it', async () => {
  fake = await startFakeProvider()
  fake.rateLimit({ forMs: 60_000 })
  expect((await post(`${fake.baseURL}/embeddingz`)).status).toBe(404)
  expect((await post(`${fake.baseURL}/chat/completions`)).status).toBe(429)
})

it('a GET where only POST is answered is a 404 too, the hang scripted for it kept', async () => {
  fake = await startFakeProvider()
  fake.enqueue(reply.hang())
  const res = await fetch(`${fake.baseURL}/chat/completions`, {
    signal: AbortSignal.timeout(5000),
  })
  expect(res.status).toBe(404)
  expect(fake.queuedReplies).toBe(1)
})

it.each([
  [
    'anthropic' as const,
    '/v1/message',
    { type: 'error', error: { type: 'not_found_error', message: 'Not Found (POST /v1/message)' } },
  ],
  [
    'gemini' as const,
    '/v1beta/models/g:generate',
    {
      error: {
        code: 404,
        message: 'The requested URL (POST /v1beta/models/g:generate) was not found on this server.',
        status: 'NOT_FOUND',
      },
    },
  ],
])('the %s fake answers it in its own error shape', async (dialect, path, body) => {
  fake = await startFakeProvider({ dialect })
  fake.enqueue(reply.error(529, { type: 'error', error: { type: 'overloaded_error' } }))
  const res = await post(`${fake.url}${path}`)
  expect(res.status).toBe(404)
  expect(await res.json()).toEqual(body)
  expect(fake.queuedReplies).toBe(1)
})

// Named as each API names its answers: Anthropic's 404 carried OpenAI's
// `x-request-id`, and Gemini's one, where the API sends none.
it.each([
  ['openai' as const, '/v1/chat/completion', 'x-request-id', ['request-id']],
  ['anthropic' as const, '/v1/message', 'request-id', ['x-request-id']],
  ['gemini' as const, '/v1beta/models/g:generate', undefined, ['request-id', 'x-request-id']],
])('the %s fake names its 404 as the API names its answers', async (dialect, path, named, not) => {
  fake = await startFakeProvider({ dialect })
  const res = await post(`${fake.url}${path}`)
  expect(res.status).toBe(404)
  if (named !== undefined) expect(res.headers.get(named)).toMatch(/^req_[0-9a-f]{24}$/)
  for (const header of not) expect(res.headers.get(header)).toBeNull()
})

// A base URL with a trailing slash joined to `/v1/…`: the path was read as a
// relative URL, `//v1/…` naming the host `v1`, and recorded (and named in
// the 404) without its first segment — the test blamed a client that had
// dropped `/v1`.
it('records a path that starts with // as the client sent it, and names it so in the 404', async () => {
  fake = await startFakeProvider()
  const res = await post(`${fake.url}//v1/chat/completion?x=1`)
  expect(res.status).toBe(404)
  expect(await res.json()).toMatchObject({
    error: { message: 'Invalid URL (POST //v1/chat/completion)' },
  })
  expect(fake.requests[0]).toMatchObject({ path: '//v1/chat/completion', query: { x: '1' } })
})
