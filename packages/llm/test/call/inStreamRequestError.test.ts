import { faultServer } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { callModel } from '../../src/call/callModel.js'
import { dialects } from '../../src/dialects/dialects.js'
import { isModelUnavailable } from '../../src/errors/ModelUnavailableError.js'
import { FAST_RETRIES, useFakes, user } from './support/fakes.js'
import { openAIChunk } from './support/streamingServer.js'

// An error frame after the 200 that says the request was at fault, in the
// OpenAI shape: OpenAI's own `invalid_request_error` (a reasoning model's
// `invalid_prompt`, sent after the stream began: epam/ai-dial-chat#4556),
// and vLLM's `create_streaming_error_response`, which labels what its
// stream generator raised `BadRequestError` with `code: 400` (every
// exception in older releases; ValueError, RuntimeError — CUDA errors
// among them — in newer ones, other exceptions `InternalServerError`/500).
// It was read as an unexplained server error and sent twice more to the same
// model, each a generation that may be billed.
const frame = (error: Record<string, unknown>) => `data: ${JSON.stringify({ error })}\n\n`
const invalidPrompt = frame({
  message: 'Invalid prompt: your prompt was flagged as potentially violating our usage policy.',
  type: 'invalid_request_error',
  param: null,
  code: 'invalid_prompt',
})
const vllmBadRequest = frame({
  object: 'error',
  message: 'The decoder prompt cannot be empty',
  type: 'BadRequestError',
  param: null,
  code: 400,
})
const vllmInternal = frame({
  message: 'EngineCore encountered an issue.',
  type: 'InternalServerError',
  param: null,
  code: 500,
})

describe('an OpenAI-shaped error frame that says the request was at fault', () => {
  it.each([
    ['openai', invalidPrompt],
    ['openai', vllmBadRequest],
    ['deepseek', invalidPrompt],
    ['qwen', vllmBadRequest],
  ] as const)('%s: not retryable, and not request-bound (a fallback may answer)', (name, data) => {
    const error = dialects[name].normalizeStreamError({ event: undefined, data: data.slice(6) })
    expect(error).toMatchObject({ kind: 'server_error', retryable: false, status: 200 })
  })

  it('the same error in a 200 body is read the same way', () => {
    const error = dialects.openai.normalizeError({ status: 200, body: invalidPrompt.slice(6) })
    expect(error).toMatchObject({
      kind: 'server_error',
      retryable: false,
      providerCode: 'invalid_prompt',
    })
  })

  it('an engine or server error stays retryable', () => {
    for (const data of [
      vllmInternal,
      frame({ message: 'The server had an error', type: 'server_error', code: null }),
    ]) {
      expect(
        dialects.openai.normalizeStreamError({ event: undefined, data: data.slice(6) }),
      ).toMatchObject({ kind: 'server_error', retryable: true, status: 200 })
    }
  })

  it('a code that names the kind still decides it; "overloaded" in the words still does', () => {
    const filtered = frame({ message: 'x', type: 'invalid_request_error', code: 'content_filter' })
    expect(
      dialects.openai.normalizeStreamError({ event: undefined, data: filtered.slice(6) }),
    ).toMatchObject({ kind: 'content_policy', retryable: false })
    const busy = frame({
      message: 'The engine is currently overloaded',
      type: 'invalid_request_error',
    })
    expect(
      dialects.openai.normalizeStreamError({ event: 'error', data: busy.slice(6) }),
    ).toMatchObject({ kind: 'overloaded', retryable: true })
  })
})

describe('callModel, streaming, given such a frame', () => {
  const fakes = useFakes()
  const servers: Array<{ close(): Promise<void> }> = []
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => s.close()))
  })
  const streamOf = async (body: string) => {
    const server = await faultServer({
      type: 'respond',
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      body,
    })
    servers.push(server)
    return server
  }
  const request = { messages: [user('hi')], maxTokens: 8, stream: true as const }

  it('is not sent to the same model again', async () => {
    const server = await streamOf(openAIChunk({ role: 'assistant', content: '' }) + invalidPrompt)
    const model = fakes.adapter(
      openAICompatible({ baseURL: `${server.url}/v1`, apiKey: 'sk', model: 'm' }),
    )
    const error = await callModel({
      models: [model],
      request,
      retry: { maxAttempts: 3, delay: FAST_RETRIES },
      limits: { admission: false },
    }).result.catch((e: unknown) => e)
    expect(isModelUnavailable(error)).toBe(true)
    expect((error as { lastCause?: unknown }).lastCause).toMatchObject({
      kind: 'server_error',
      retryable: false,
      providerCode: 'invalid_prompt',
    })
    expect(server.records).toHaveLength(1)
  })

  it('falls back to the next model, whose answer is delivered', async () => {
    const server = await streamOf(openAIChunk({ role: 'assistant', content: '' }) + vllmBadRequest)
    const backup = await fakes.start({ dialect: 'openai' })
    const broken = fakes.adapter(
      openAICompatible({ baseURL: `${server.url}/v1`, apiKey: 'sk', model: 'm', name: 'vllm' }),
    )
    const healthy = fakes.adapter(
      openAICompatible({ baseURL: backup.baseURL, apiKey: 'sk', model: 'gpt-4o-mini' }),
    )
    const answer = await callModel({
      models: [broken, healthy],
      request,
      retry: { maxAttempts: 3, delay: FAST_RETRIES },
      limits: { admission: false },
    }).result
    expect(answer.text).toBe('Hello from the fake provider.')
    expect(server.records).toHaveLength(1)
  })

  it('an engine error is still asked again', async () => {
    const server = await streamOf(openAIChunk({ role: 'assistant', content: '' }) + vllmInternal)
    const model = fakes.adapter(
      openAICompatible({ baseURL: `${server.url}/v1`, apiKey: 'sk', model: 'm' }),
    )
    await callModel({
      models: [model],
      request,
      retry: { maxAttempts: 2, delay: FAST_RETRIES },
      limits: { admission: false },
    }).result.catch(() => undefined)
    expect(server.records).toHaveLength(2)
  })
})
