import { describe, expect, it } from 'vitest'
import { dialects } from '../../src/dialects/dialects.js'
import { PROVIDER_REFUSES_VALUE } from '../../src/errors/InvalidChatRequestError.js'
import type { ChatRequest } from '../../src/types.js'
import { user } from '../call/support/fakes.js'

/**
 * Gemini 2.5 and later answer a presence or frequency penalty 400 "Penalty
 * is not enabled for models/gemini-2.5-flash": the dialect translated it to
 * `generationConfig.presencePenalty` and sent it, a bad request no fallback
 * follows. Gemini 2.0 Flash takes one.
 */
const base: ChatRequest = { messages: [user('hi')], maxTokens: 16 }

function refusal(model: string, extra: Record<string, unknown>) {
  try {
    dialects.gemini.buildRequest({ ...base, extra }, model)
  } catch (error) {
    return error
  }
  return undefined
}

const configOf = (model: string, extra: Record<string, unknown>) =>
  (
    dialects.gemini.buildRequest({ ...base, extra }, model).body as {
      generationConfig: Record<string, unknown>
    }
  ).generationConfig

describe('Gemini: penalties to the models that take none', () => {
  it('a penalty to Gemini 2.5 or later is refused before sending, naming the field and model', () => {
    for (const model of ['gemini-2.5-flash', 'models/gemini-2.5-pro', 'gemini-3.7-flash']) {
      const error = refusal(model, { presence_penalty: 0.5 })
      expect(error, model).toMatchObject({
        field: 'presence_penalty',
        reason: PROVIDER_REFUSES_VALUE,
      })
      expect((error as Error).message).toContain(model)
    }
    expect(refusal('gemini-2.5-flash', { frequency_penalty: -0.5 })).toMatchObject({
      field: 'frequency_penalty',
    })
  })

  it('Gemini 2.0 and a name without a version take it; a penalty of 0 is not sent', () => {
    expect(configOf('gemini-2.0-flash', { presence_penalty: 0.5 })['presencePenalty']).toBe(0.5)
    expect(configOf('tuned-model', { frequency_penalty: 0.5 })['frequencyPenalty']).toBe(0.5)
    expect(configOf('gemini-2.5-flash', { presence_penalty: 0 })).not.toHaveProperty(
      'presencePenalty',
    )
  })

  it("the request's own refusals come first", () => {
    expect(refusal('gemini-2.5-flash', { presence_penalty: 0.5, seed: 2 ** 40 })).toMatchObject({
      field: 'seed',
    })
  })
})
