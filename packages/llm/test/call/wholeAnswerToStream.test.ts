import { faultServer } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { gemini } from '../../src/adapters/gemini.js'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { callModel } from '../../src/call/callModel.js'
import type { ChatResponse, StreamEvent } from '../../src/types.js'
import { useFakes, user } from './support/fakes.js'

// A stream request answered with one whole JSON answer (a proxy or an
// OpenAI-compatible server that does not stream) is replayed as stream
// events. The replay dropped what the answer said of itself: a refusal's
// mark, the model that answered, the provider's own reason for an `error`
// finish, and which call a tool-call delta belongs to.

const fakes = useFakes()
const servers: Array<{ close(): Promise<void> }> = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()))
})

/** Answers every request, streamed or not, with `answer` as JSON. */
async function answering(answer: unknown) {
  const server = await faultServer({
    type: 'respond',
    status: 200,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(answer),
  })
  servers.push(server)
  return server
}

const request = { messages: [user('hi')], maxTokens: 16 }

/** The same call whole and streamed: the streamed events and both answers. */
async function both(model: ReturnType<typeof fakes.adapter>) {
  const whole = await callModel({ models: [model], request, limits: { admission: false } })
  const stream = callModel({
    models: [model],
    request: { ...request, stream: true },
    limits: { admission: false },
  })
  const events: StreamEvent[] = []
  for await (const event of stream) events.push(event)
  return { whole, streamed: await stream.result, events }
}

const openAIAnswer = (message: object, finish = 'stop') => ({
  id: 'chatcmpl-1',
  object: 'chat.completion',
  model: 'gpt-4o-2024-08-06',
  choices: [{ index: 0, message: { role: 'assistant', ...message }, finish_reason: finish }],
  usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
})

const comparable = (answer: ChatResponse) => ({
  model: answer.model,
  content: answer.content,
  refusal: answer.refusal,
  finishReason: answer.finishReason,
  providerFinishReason: answer.providerFinishReason,
})

describe('a whole JSON answer to a stream request', () => {
  it('keeps a refusal marked, and the model that answered', async () => {
    const server = await answering(openAIAnswer({ content: null, refusal: 'I can’t help.' }))
    const model = fakes.adapter(
      openAICompatible({ baseURL: `${server.url}/v1`, apiKey: 'sk', model: 'gpt-4o' }),
    )
    const { whole, streamed, events } = await both(model)
    expect(events[0]).toEqual({ type: 'text', text: 'I can’t help.', refusal: true })
    // Before: the refusal came as the answer's text (`refusal` undefined), from `gpt-4o`.
    expect(streamed.refusal).toBe('I can’t help.')
    expect(streamed.model).toBe('gpt-4o-2024-08-06')
    expect(comparable(streamed)).toEqual(comparable(whole))
  })

  it('keeps two tool calls a server gave one id apart', async () => {
    const call = (args: string) => ({
      id: 'call_same',
      type: 'function',
      function: { name: 'lookup', arguments: args },
    })
    const server = await answering(
      openAIAnswer({ content: null, tool_calls: [call('{"x":1}'), call('{"y":2}')] }, 'tool_calls'),
    )
    const model = fakes.adapter(
      openAICompatible({ baseURL: `${server.url}/v1`, apiKey: 'sk', model: 'gpt-4o' }),
    )
    const { whole, streamed } = await both(model)
    // Before: one call whose arguments were `{"x":1}{"y":2}`.
    expect(streamed.content).toHaveLength(2)
    expect(streamed.content).toEqual(whole.content)
  })

  const geminiAnswer = (parts: object[] | undefined) => ({
    candidates: [
      {
        content: parts === undefined ? { role: 'model' } : { role: 'model', parts },
        finishReason: 'MALFORMED_FUNCTION_CALL',
      },
    ],
    usageMetadata: { promptTokenCount: 5, candidatesTokenCount: 2, totalTokenCount: 7 },
    modelVersion: 'gemini-2.5-flash-001',
    responseId: 'r1',
  })

  it('keeps the provider’s reason for an error finish after text', async () => {
    const server = await answering(geminiAnswer([{ text: 'partial' }]))
    const model = fakes.adapter(
      gemini({ baseURL: `${server.url}/v1beta`, apiKey: 'sk', model: 'gemini-2.5-flash' }),
    )
    const stream = callModel({
      models: [model],
      request: { ...request, stream: true },
      limits: { admission: false },
    })
    const answer = await stream.result
    // A token reached the caller: the answer ends as it came, its reason kept.
    expect(answer.finishReason).toBe('error')
    expect(answer.providerFinishReason).toBe('MALFORMED_FUNCTION_CALL')
    expect(answer.model).toBe('gemini-2.5-flash-001')
  })

  it('names that reason in the failure of an error finish with no token', async () => {
    const server = await answering(geminiAnswer(undefined))
    const model = fakes.adapter(
      gemini({ baseURL: `${server.url}/v1beta`, apiKey: 'sk', model: 'gemini-2.5-flash' }),
    )
    const records: Array<{ reason?: string | undefined; responseModel?: string | undefined }> = []
    const stream = callModel({
      models: [model],
      request: { ...request, stream: true },
      retry: { maxAttempts: 1 },
      limits: { admission: false },
      onAttempt: (record) => records.push(record),
    })
    const error = (await stream.result.catch((e: unknown) => e)) as {
      lastCause?: { providerCode?: string }
    }
    // As the same answer not streamed: `finishReason:<REASON>`, and the answering model.
    expect(error.lastCause?.providerCode).toBe('finishReason:MALFORMED_FUNCTION_CALL')
    expect(records[0]?.reason).toContain('finishReason:MALFORMED_FUNCTION_CALL')
    expect(records[0]?.responseModel).toBe('gemini-2.5-flash-001')
  })
})
