import { reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { callModel } from '../../src/call/callModel.js'
import { dialects } from '../../src/dialects/dialects.js'
import {
  isInvalidChatRequest,
  PROVIDER_REFUSES_VALUE,
} from '../../src/errors/InvalidChatRequestError.js'
import type { ChatRequest } from '../../src/types.js'
import { useFakes, user } from '../call/support/fakes.js'

/**
 * OpenAI's reasoning models answer 400 "Unsupported value: 'temperature'
 * does not support 0.2 with this model. Only the default (1) value is
 * supported." to a temperature but 1, and the same of `top_p`,
 * `logprobs` and the penalties: the o-series and GPT-5 always, GPT-5.x with a reasoning
 * effort but `none` (and GPT-5.5 and later without one: their default is
 * `medium`). The dialect forwarded them, and the call failed at OpenAI with
 * a bad request no fallback follows.
 */
const fakes = useFakes()

const base: ChatRequest = { messages: [user('hi')], maxTokens: 16 }

function built(model: string, request: Partial<ChatRequest>): Record<string, unknown> {
  return dialects.openai.buildRequest({ ...base, ...request }, model).body
}

function refusal(model: string, request: Partial<ChatRequest>, dialect = dialects.openai) {
  try {
    dialect.buildRequest({ ...base, ...request }, model)
  } catch (error) {
    return error
  }
  return undefined
}

describe("OpenAI's reasoning models: sampling settings but the default", () => {
  it('a temperature but 1 to o3 or gpt-5-mini is refused before anything is sent, naming field and model', async () => {
    const fake = await fakes.start({ dialect: 'openai', reply: reply.text('hello') })
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'gpt-5-mini' }),
    )
    const refused = await callModel({
      models: [model],
      request: { ...base, temperature: 0.2 },
      limits: { admission: false },
    }).then(
      () => undefined,
      (error: unknown) => error,
    )
    expect(isInvalidChatRequest(refused)).toBe(true)
    expect(refused).toMatchObject({ field: 'temperature', reason: PROVIDER_REFUSES_VALUE })
    expect((refused as Error).message).toContain('gpt-5-mini')
    expect((refused as Error).message).toContain('leave it out')
    expect(fake.requests).toHaveLength(0)

    for (const name of ['o3', 'o4-mini-2025-04-16', 'o1', 'gpt-5', 'gpt-5-nano-2025-08-07']) {
      expect(refusal(name, { temperature: 0 }), name).toMatchObject({ field: 'temperature' })
    }
  })

  it('any top_p but 1, logprobs and a penalty are refused the same way', () => {
    expect(refusal('o3', { topP: 0.9 })).toMatchObject({
      field: 'top_p',
      reason: PROVIDER_REFUSES_VALUE,
    })
    expect(refusal('gpt-5', { extra: { logprobs: true } })).toMatchObject({ field: 'logprobs' })
    expect(refusal('gpt-5-mini', { extra: { presence_penalty: 0.5 } })).toMatchObject({
      field: 'presence_penalty',
    })
    expect(refusal('o4-mini', { extra: { frequency_penalty: -1 } })).toMatchObject({
      field: 'frequency_penalty',
    })
  })

  it('the defaults (temperature 1, top_p 1, logprobs false, penalties 0) ask for what the model does: not sent', () => {
    const body = built('o3-mini', {
      temperature: 1,
      topP: 1,
      extra: { logprobs: false, presence_penalty: 0, frequency_penalty: 0 },
    })
    for (const field of [
      'temperature',
      'top_p',
      'logprobs',
      'presence_penalty',
      'frequency_penalty',
    ]) {
      expect(body, field).not.toHaveProperty(field)
    }
  })

  it('GPT-5.1 and 5.2 take them unasked or with effort none, and refuse them with another effort', () => {
    for (const name of ['gpt-5.1', 'gpt-5.2-2025-12-11']) {
      expect(built(name, { temperature: 0.2 })['temperature'], name).toBe(0.2)
      expect(
        built(name, { temperature: 0.2, extra: { reasoning_effort: 'none' } })['temperature'],
      ).toBe(0.2)
      const error = refusal(name, { temperature: 0.2, extra: { reasoning_effort: 'medium' } })
      expect(error, name).toMatchObject({ field: 'temperature', reason: PROVIDER_REFUSES_VALUE })
      // The remedy names the effort that takes it.
      expect((error as Error).message).toContain('reasoning_effort "none"')
    }
    // GPT-5.5's default effort is medium: unasked, it reasons.
    expect(refusal('gpt-5.5', { temperature: 0.2 })).toMatchObject({ field: 'temperature' })
    expect(
      built('gpt-5.5', { temperature: 0.2, extra: { reasoning_effort: 'none' } })['temperature'],
    ).toBe(0.2)
    // Pro and Codex have no none effort.
    expect(refusal('gpt-5.2-pro', { topP: 0.5 })).toMatchObject({ field: 'top_p' })
    expect(refusal('gpt-5.1-codex-max', { temperature: 0 })).toMatchObject({
      field: 'temperature',
    })
  })

  it('the chat models, older models, and the compatible providers go as before', () => {
    for (const name of ['gpt-5-chat-latest', 'gpt-5.1-chat-latest', 'gpt-4o', 'gpt-4.1-mini']) {
      const body = built(name, {
        temperature: 0.2,
        topP: 0.5,
        extra: { logprobs: true, presence_penalty: 0.5 },
      })
      expect(body, name).toMatchObject({
        temperature: 0.2,
        top_p: 0.5,
        logprobs: true,
        presence_penalty: 0.5,
      })
    }
    // `o3` on another provider is that provider's model.
    expect(refusal('o3', { temperature: 0.2 }, dialects.qwen)).toBeUndefined()
  })

  it("the request's own refusals come first: a provider value is thrown last", () => {
    expect(refusal('o3', { temperature: 0.2, extra: { n: 2 } })).toMatchObject({ field: 'n' })
  })
})
