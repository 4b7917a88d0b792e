import { reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { callModel } from '../../src/call/callModel.js'
import { dialects } from '../../src/dialects/dialects.js'
import {
  isInvalidChatRequest,
  PROVIDER_REFUSES_VALUE,
} from '../../src/errors/InvalidChatRequestError.js'
import type { ChatRequest } from '../../src/types.js'
import { useFakes, user } from '../call/support/fakes.js'

/**
 * `reasoning_effort` mapped as Google's OpenAI layer maps it, sent whatever
 * the model can do: Gemini 2.5 Pro answers `none`'s `thinkingBudget: 0`
 * 400 "Budget 0 is invalid. This model only works in thinking mode." — a
 * bad request no fallback follows.
 */
const fakes = useFakes()

const base: ChatRequest = { messages: [user('why?')], maxTokens: 2000 }

function refusal(
  model: string,
  extra: Record<string, unknown>,
  request: Partial<ChatRequest> = {},
) {
  try {
    dialects.gemini.buildRequest({ ...base, ...request, extra }, model)
  } catch (error) {
    return error
  }
  return undefined
}

const thinkingOf = (model: string, effort: string) =>
  (
    dialects.gemini.buildRequest({ ...base, extra: { reasoning_effort: effort } }, model).body as {
      generationConfig: Record<string, unknown>
    }
  ).generationConfig['thinkingConfig']

describe('Gemini: a reasoning_effort the model has no thinking for', () => {
  it('none to gemini-2.5-pro, which always thinks, is refused before anything is sent, naming field and model', async () => {
    const fake = await fakes.start({ dialect: 'gemini', reply: reply.text('Because.') })
    const refused = await callModel({
      models: [fakes.adapterFor('gemini', fake.baseURL, 'gemini-2.5-pro')],
      request: { ...base, extra: { reasoning_effort: 'none' } },
      limits: { admission: false },
    }).then(
      () => undefined,
      (error: unknown) => error,
    )
    expect(isInvalidChatRequest(refused)).toBe(true)
    expect(refused).toMatchObject({ field: 'reasoning_effort', reason: PROVIDER_REFUSES_VALUE })
    expect((refused as Error).message).toContain('gemini-2.5-pro')
    expect(fake.requests).toHaveLength(0)
    for (const model of ['models/gemini-2.5-pro', 'gemini-2.5-pro-preview-06-05']) {
      expect(refusal(model, { reasoning_effort: 'none' }), model).toMatchObject({
        field: 'reasoning_effort',
      })
    }
  })

  it('the models that have them still get them', () => {
    expect(thinkingOf('gemini-2.5-flash', 'none')).toEqual({ thinkingBudget: 0 })
    expect(thinkingOf('gemini-2.5-flash-lite', 'none')).toEqual({ thinkingBudget: 0 })
    expect(thinkingOf('gemini-2.5-pro', 'low')).toEqual({
      thinkingBudget: 1024,
      includeThoughts: true,
    })
    expect(thinkingOf('gemini-3.1-pro-preview', 'medium')).toEqual({
      thinkingLevel: 'medium',
      includeThoughts: true,
    })
    expect(thinkingOf('gemini-3-flash-preview', 'medium')).toEqual({
      thinkingLevel: 'medium',
      includeThoughts: true,
    })
    // Served by Gemini 3.1 Pro since Gemini 3 Pro's shutdown: it has medium.
    expect(thinkingOf('gemini-3-pro-preview', 'medium')).toEqual({
      thinkingLevel: 'medium',
      includeThoughts: true,
    })
    expect(thinkingOf('gemini-3-pro-preview', 'high')).toEqual({
      thinkingLevel: 'high',
      includeThoughts: true,
    })
  })

  it("the request's own refusals come first: a provider value is thrown last", () => {
    expect(refusal('gemini-2.5-pro', { reasoning_effort: 'none', seed: 2 ** 40 })).toMatchObject({
      field: 'seed',
    })
  })
})
