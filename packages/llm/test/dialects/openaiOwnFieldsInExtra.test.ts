import { reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { callModel } from '../../src/call/callModel.js'
import { dialects } from '../../src/dialects/dialects.js'
import { isInvalidChatRequest } from '../../src/errors/InvalidChatRequestError.js'
import type { ChatRequest } from '../../src/types.js'
import { useFakes, user } from '../call/support/fakes.js'

const fakes = useFakes()

function refusal(dialect: 'openai' | 'deepseek', request: ChatRequest): unknown {
  try {
    dialects[dialect].buildRequest(request, 'm')
  } catch (error) {
    return error
  }
  return undefined
}

const base: ChatRequest = { messages: [user('hi')], maxTokens: 16 }

describe("OpenAI's wire: extra fields the request's own fields set are refused, not sent beside them", () => {
  it('extra.stream true on a whole-answer call: refused before sending — it had the provider stream an answer read as JSON, asked three times', async () => {
    const fake = await fakes.start({ dialect: 'openai', reply: reply.text('hello') })
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'gpt-4o' }),
    )
    const refused = await callModel({
      models: [model],
      request: { ...base, extra: { stream: true } },
      limits: { admission: false },
    }).then(
      () => undefined,
      (error: unknown) => error,
    )
    expect(isInvalidChatRequest(refused)).toBe(true)
    expect(refused).toMatchObject({ field: 'stream' })
    expect(fake.requests).toHaveLength(0)
  })

  it('the other name of the output cap: refused for each dialect (it went out beside the one built)', () => {
    for (const dialect of ['openai', 'deepseek'] as const) {
      for (const field of ['max_tokens', 'max_completion_tokens']) {
        const error = refusal(dialect, { ...base, extra: { [field]: 4000 } })
        expect(isInvalidChatRequest(error), `${dialect} ${field}`).toBe(true)
        expect(error).toMatchObject({ field })
      }
    }
  })

  it('extra.stream that agrees with the call, or null, still goes through', () => {
    expect(refusal('openai', { ...base, stream: true, extra: { stream: true } })).toBeUndefined()
    expect(
      refusal('openai', { ...base, extra: { stream: false, max_tokens: null } }),
    ).toBeUndefined()
    expect(
      isInvalidChatRequest(refusal('openai', { ...base, stream: true, extra: { stream: false } })),
    ).toBe(true)
  })
})
