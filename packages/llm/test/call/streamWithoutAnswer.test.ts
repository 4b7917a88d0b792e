import { faultServer } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { anthropic } from '../../src/adapters/anthropic.js'
import { gemini } from '../../src/adapters/gemini.js'
import type { ModelAdapter } from '../../src/adapters/ModelAdapter.js'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { callModel } from '../../src/call/callModel.js'
import { isModelUnavailable } from '../../src/errors/ModelUnavailableError.js'
import { FAST_RETRIES, useFakes, user } from './support/fakes.js'
import { openAIChunk } from './support/streamingServer.js'

// One rule for every dialect: a 200 stream that ends with no finish reason
// and no content (no text, thinking or tool call) is no answer. It used to
// depend on the bytes: an empty body was a cut (not asked again),
// `data: [DONE]` alone was asked again, and a role-only chunk then
// `[DONE]` — or Anthropic's `message_start` then `message_stop` — was an
// empty success with `finishReason: 'unknown'`.

const fakes = useFakes()
const servers: Array<{ close(): Promise<void> }> = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()))
})

type Make = (baseURL: string) => ModelAdapter
const openai: Make = (url) => openAICompatible({ baseURL: `${url}/v1`, apiKey: 'sk', model: 'm' })
const claude: Make = (url) => anthropic({ baseURL: url, apiKey: 'sk', model: 'm' })
const gem: Make = (url) => gemini({ baseURL: url, apiKey: 'sk', model: 'm' })

const event = (type: string, data: object) =>
  `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`
const messageStart = event('message_start', {
  message: {
    id: 'msg_1',
    type: 'message',
    role: 'assistant',
    model: 'm',
    content: [],
    usage: { input_tokens: 5, output_tokens: 1 },
  },
})

async function call(make: Make, body: string) {
  const server = await faultServer({
    type: 'respond',
    status: 200,
    headers: { 'content-type': 'text/event-stream' },
    body,
  })
  servers.push(server)
  const result = await callModel({
    models: [fakes.adapter(make(server.url))],
    request: { messages: [user('hi')], maxTokens: 8, stream: true },
    retry: { maxAttempts: 2, delay: FAST_RETRIES },
    limits: { admission: false },
  }).result.then(
    (answer) => ({ answer, error: undefined }),
    (error: unknown) => ({ answer: undefined, error }),
  )
  return { ...result, requests: server.records.length }
}

/** Failed as no answer: a retryable server_error, asked of the same model again. */
function expectNoAnswer(outcome: Awaited<ReturnType<typeof call>>) {
  expect(outcome.answer).toBeUndefined()
  expect(isModelUnavailable(outcome.error)).toBe(true)
  const cause = (outcome.error as { lastCause?: { kind?: string; message?: string } }).lastCause
  expect(cause).toMatchObject({ kind: 'server_error', retryable: true, status: 200 })
  expect(String(cause?.message)).toMatch(/ended with no answer/)
  expect(outcome.requests).toBe(2)
}

describe('a 200 stream with no finish reason and no content is no answer', () => {
  it('openai: an empty body (it was a cut, not asked again)', async () => {
    expectNoAnswer(await call(openai, ''))
  })

  it('openai: keep-alive comments only', async () => {
    expectNoAnswer(await call(openai, ': keep-alive\n\n: keep-alive\n\n'))
  })

  it('openai: `data: [DONE]` alone', async () => {
    expectNoAnswer(await call(openai, 'data: [DONE]\n\n'))
  })

  it('openai: a role-only chunk then `[DONE]` (it was an empty success)', async () => {
    expectNoAnswer(
      await call(openai, `${openAIChunk({ role: 'assistant', content: '' })}data: [DONE]\n\n`),
    )
  })

  it('anthropic: `message_start` then `message_stop` (it was an empty success)', async () => {
    expectNoAnswer(await call(claude, messageStart + event('message_stop', {})))
  })

  it('anthropic: an empty body', async () => {
    expectNoAnswer(await call(claude, ''))
  })

  it('gemini: an empty body', async () => {
    expectNoAnswer(await call(gem, ''))
  })
})

describe('what stays as it was', () => {
  it('content, then `[DONE]` without a finish reason: the answer, `unknown`', async () => {
    const { answer } = await call(openai, `${openAIChunk({ content: 'hi' })}data: [DONE]\n\n`)
    expect(answer).toMatchObject({ text: 'hi', finishReason: 'unknown' })
  })

  it('a finish reason with no content: an empty answer the provider did finish', async () => {
    const { answer, requests } = await call(
      claude,
      messageStart +
        event('message_delta', {
          delta: { stop_reason: 'end_turn' },
          usage: { output_tokens: 1 },
        }) +
        event('message_stop', {}),
    )
    expect(answer).toMatchObject({ text: '', finishReason: 'stop' })
    expect(requests).toBe(1)
  })

  it('a chunk, then the body ends before the end marker: a cut, not asked again', async () => {
    const { error, requests } = await call(openai, openAIChunk({ role: 'assistant', content: '' }))
    expect((error as { lastCause?: unknown }).lastCause).toMatchObject({
      kind: 'network',
      retryable: false,
    })
    expect(requests).toBe(1)
  })

  it('gemini: chunks with no finishReason, then the body ends: a cut, not asked again', async () => {
    const chunk = {
      candidates: [{ content: { role: 'model', parts: [] } }],
      usageMetadata: { promptTokenCount: 3 },
    }
    const { error, requests } = await call(gem, `data: ${JSON.stringify(chunk)}\n\n`)
    expect((error as { lastCause?: unknown }).lastCause).toMatchObject({ retryable: false })
    expect(requests).toBe(1)
  })
})
