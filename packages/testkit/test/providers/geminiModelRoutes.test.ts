import { afterEach, describe, expect, it } from 'vitest'
import {
  type FakeProvider,
  geminiErrors,
  reply,
  startFakeProvider,
} from '../../src/providers/index.js'

/**
 * Google routes `generateContent` at `{model=models/*}` and
 * `{model=tunedModels/*}` (ai.google.dev/api/generate-content): the id is one
 * path segment, percent-decoded into the resource name. So a resource name
 * escaped whole, `/models/models%2Fgemini-2.5-flash`, asks for the model
 * `models/models/gemini-2.5-flash` — a 404 `NOT_FOUND` from Google. The fake
 * decoded the segment and answered it 200, as `models/gemini-2.5-flash`, and
 * had no tuned-model route at all.
 */
let fake: FakeProvider | undefined
afterEach(async () => {
  await fake?.close()
  fake = undefined
})

const post = (url: string) =>
  fetch(url, {
    method: 'POST',
    headers: { 'x-goog-api-key': 'k', 'content-type': 'application/json' },
    body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }),
  })

describe.each([
  ['generateContent', 'generateContent'],
  ['streamGenerateContent?alt=sse', 'streamGenerateContent'],
  ['streamGenerateContent', 'streamGenerateContent'],
])('fake Gemini routing, %s', (method, methodName) => {
  it('an escaped / in the model segment is a 404 NOT_FOUND naming the model it asked for', async () => {
    fake = await startFakeProvider({ dialect: 'gemini' })
    // Scripted, and a rate-limit window open: Google's 404 comes first all the same.
    fake.enqueue(geminiErrors.unavailable())
    fake.rateLimit({ forMs: 60_000 })
    const res = await post(`${fake.baseURL}/models/models%2Fgemini-2.5-flash:${method}`)
    expect(res.status).toBe(404)
    expect(await res.json()).toEqual({
      error: {
        code: 404,
        message: `models/models/gemini-2.5-flash is not found for API version v1beta, or is not supported for ${methodName}. Call ListModels to see the list of available models and their supported methods.`,
        status: 'NOT_FOUND',
      },
    })
    expect(fake.queuedReplies).toBe(1)
    expect(fake.paidGenerations).toBe(0)
    expect(fake.requests[0]).toMatchObject({ route: 'gemini', reply: undefined, outcome: 'error' })
  })

  it('a tuned model is answered at its own collection, its record naming it', async () => {
    fake = await startFakeProvider({ dialect: 'gemini', reply: reply.text('tuned ok') })
    const res = await post(`${fake.baseURL}/tunedModels/support-bot-7x1:${method}`)
    expect(res.status).toBe(200)
    expect(await res.text()).toContain('tuned')
    expect(fake.requests[0]).toMatchObject({
      route: 'gemini',
      model: 'tunedModels/support-bot-7x1',
      outcome: 'success',
    })
  })

  it('a model id with an escape that is no `/` is still the model it names', async () => {
    fake = await startFakeProvider({ dialect: 'gemini' })
    const res = await post(`${fake.baseURL}/models/gemini-2.5-flash%2Dlite:${method}`)
    expect(res.status).toBe(200)
    expect(fake.requests[0]?.model).toBe('gemini-2.5-flash-lite')
  })
})

it('a tuned model name escaped whole is a 404 too, and the version in the message is the path’s', async () => {
  fake = await startFakeProvider({ dialect: 'gemini' })
  const res = await post(`${fake.url}/v1/tunedModels/tunedModels%2Fbot:generateContent`)
  expect(res.status).toBe(404)
  expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(
    /^tunedModels\/tunedModels\/bot is not found for API version v1, /,
  )
})

it('a malformed escape in the model segment is a 404, not a failure of the fake', async () => {
  fake = await startFakeProvider({ dialect: 'gemini' })
  const res = await post(`${fake.baseURL}/models/gemini%E0:generateContent`)
  expect(res.status).toBe(404)
  expect(((await res.json()) as { error: { status: string } }).error.status).toBe('NOT_FOUND')
  expect(fake.requests[0]?.failure).toBeUndefined()
})
