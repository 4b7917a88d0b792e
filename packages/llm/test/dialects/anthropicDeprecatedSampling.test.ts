import { describe, expect, it } from 'vitest'
import { dialects } from '../../src/dialects/dialects.js'
import {
  isInvalidChatRequest,
  PROVIDER_REFUSES_VALUE,
} from '../../src/errors/InvalidChatRequestError.js'
import type { ChatMessage, ChatRequest } from '../../src/types.js'

/**
 * Claude Opus 4.7 and later, and every Claude 5 model, answer 400
 * "`temperature` is deprecated for this model." to a temperature but 1, and
 * "`top_p` is deprecated for this model." to any `top_p` (a live probe met
 * it for 0.5, 0.97 and 1: mnfst/modelparams.dev#238); Claude 4.6 and later
 * answer 400 "This model does not support assistant message prefill." to a
 * conversation that ends with the assistant's message. Those 400s go to no
 * fallback: a value that asks for what the model does anyway is not sent,
 * any other is refused before sending, naming the field and the model, as a
 * value only this provider refuses (`provider_value`: a gateway leaves a
 * fallback entry to refuse it when reached).
 */

const hi: ChatMessage[] = [{ role: 'user', content: 'hi' }]
const prefill: ChatMessage[] = [
  { role: 'user', content: 'JSON please' },
  { role: 'assistant', content: '{' },
]

function build(model: string, fields: Partial<ChatRequest>): Record<string, unknown> {
  return dialects.anthropic.buildRequest({ maxTokens: 100, messages: hi, ...fields }, model)
    .body as Record<string, unknown>
}

function refusal(
  model: string,
  fields: Partial<ChatRequest>,
): { field: string; message: string; reason: string | undefined } | undefined {
  try {
    build(model, fields)
    return undefined
  } catch (error) {
    if (!isInvalidChatRequest(error)) throw error
    return { field: error.field, message: error.message, reason: error.reason }
  }
}

/** Opus 4.7 and later, and the Claude 5 models, under each provider's name. */
const SAMPLING_DEPRECATED = [
  'claude-opus-4-7',
  'claude-opus-4-7-20260416',
  'claude-opus-4-8',
  'anthropic.claude-opus-4-7',
  'us.anthropic.claude-opus-4-7-v1:0',
  'claude-opus-4-7@20260416',
  'claude-sonnet-5',
  'claude-opus-5-5',
  'claude-haiku-5-5',
  'claude-fable-5',
  'claude-mythos-5-1',
]

/** They take both, as they always did (a date is no minor version). */
const SAMPLING_TAKEN = [
  'claude-sonnet-4-5',
  'claude-opus-4-6',
  'claude-sonnet-4-6',
  'claude-haiku-4-5',
  'claude-sonnet-4-20250514',
  'claude-opus-4-1-20250805',
  'claude-3-7-sonnet-20250219',
  'anthropic.claude-3-5-sonnet-20240620-v1:0',
]

describe('sampling settings on Claude Opus 4.7 and later, and the Claude 5 models', () => {
  it('refuses a temperature but 1 before sending, naming the field, the model and the remedy', () => {
    for (const model of SAMPLING_DEPRECATED) {
      for (const temperature of [0, 0.2, 0.7, 0.99]) {
        const refused = refusal(model, { temperature })
        expect(refused, `${model} ${temperature}`).toMatchObject({
          field: 'temperature',
          reason: PROVIDER_REFUSES_VALUE,
        })
        expect(refused?.message).toContain(model)
        expect(refused?.message).toContain(`got ${temperature}`)
        expect(refused?.message).toContain('leave it out')
      }
    }
  })

  it('refuses any top_p but 1 or 0.99 before sending', () => {
    for (const model of SAMPLING_DEPRECATED) {
      for (const topP of [0.1, 0.5, 0.95, 0.97, 0.98]) {
        const refused = refusal(model, { topP })
        expect(refused, `${model} ${topP}`).toMatchObject({
          field: 'top_p',
          reason: PROVIDER_REFUSES_VALUE,
        })
        expect(refused?.message).toContain(model)
        expect(refused?.message).toContain('leave it out')
      }
      // Beside a neutral temperature, the top_p is what is refused.
      expect(refusal(model, { temperature: 1, topP: 0.9 })?.field).toBe('top_p')
    }
  })

  it('sends neither a temperature of 1 nor a top_p of 1 or 0.99: they ask for what the model does anyway', () => {
    for (const model of SAMPLING_DEPRECATED) {
      for (const fields of [
        { temperature: 1 },
        { topP: 1 },
        { topP: 0.99 },
        { temperature: 1, topP: 1 },
        { temperature: 1, topP: 0.99 },
      ]) {
        const body = build(model, fields)
        expect(body, `${model} ${JSON.stringify(fields)}`).not.toHaveProperty('temperature')
        expect(body).not.toHaveProperty('top_p')
      }
    }
  })

  it('is unchanged for earlier models: the values go as they are', () => {
    for (const model of SAMPLING_TAKEN) {
      expect(build(model, { temperature: 0.7 })['temperature'], model).toBe(0.7)
      expect(build(model, { temperature: 0 })['temperature'], model).toBe(0)
      expect(build(model, { temperature: 1 })['temperature'], model).toBe(1)
      expect(build(model, { topP: 0.9 })['top_p'], model).toBe(0.9)
    }
    // And a name that says no version.
    expect(build('claude', { temperature: 0.7 })['temperature']).toBe(0.7)
  })

  it('a temperature above 1 is still refused as out of range, for any model', () => {
    const refused = refusal('claude-opus-4-7', { temperature: 1.5 })
    expect(refused?.field).toBe('temperature')
    expect(refused?.message).toContain('from 0 to 1')
    expect(refused?.reason).toBeUndefined()
  })

  it('with thinking, the refusal says to leave it out, not to send a top_p from 0.95 (refused too)', () => {
    for (const fields of [{ topP: 0.5 }, { topP: 0.97 }, { temperature: 0.7 }]) {
      const refused = refusal('claude-opus-4-7', {
        ...fields,
        maxTokens: 4000,
        extra: { reasoning_effort: 'low' },
      })
      expect(refused, JSON.stringify(fields)).toMatchObject({ reason: PROVIDER_REFUSES_VALUE })
      expect(refused?.message).toContain('leave it out')
      expect(refused?.message).not.toContain('0.95')
    }
    // Earlier models keep thinking's own rule.
    const older = refusal('claude-opus-4-6', {
      topP: 0.5,
      maxTokens: 4000,
      extra: { reasoning_effort: 'low' },
    })
    expect(older?.message).toContain('from 0.95 to 1 with thinking')
  })

  it("hides none of the request's own refusals: checked after them", () => {
    // `seed` no Anthropic model takes: a gateway must refuse it for the whole list.
    const seed = refusal('claude-opus-4-7', { temperature: 0.7, extra: { seed: 1 } })
    expect(seed).toMatchObject({ field: 'seed' })
    expect(seed?.reason).toBeUndefined()
    const prefilled = refusal('claude-opus-4-7', { messages: prefill, extra: { seed: 1 } })
    expect(prefilled?.field).toBe('seed')
  })
})

/**
 * Opus 4.1 to 4.6, Sonnet 4.5 and 4.6, Haiku 4.5 answer 400 "`temperature`
 * and `top_p` cannot both be specified for this model. Please use only
 * one." (blacktop/ipsw#909): two values that both change sampling went as
 * they were, and the call failed with that 400.
 */
describe('temperature beside top_p on the Claude 4 models that take only one', () => {
  const ONE = [
    'claude-sonnet-4-5',
    'claude-sonnet-4-5-20250929',
    'claude-sonnet-4-6',
    'claude-haiku-4-5',
    'claude-opus-4-1-20250805',
    'claude-opus-4-6',
    'anthropic.claude-sonnet-4-5-20250929-v1:0',
  ]
  const BOTH = ['claude-sonnet-4-20250514', 'claude-opus-4-20250514', 'claude-3-7-sonnet-20250219']

  it('both changing sampling: refused before sending, naming top_p and the model', () => {
    for (const model of ONE) {
      const refused = refusal(model, { temperature: 0.7, topP: 0.9 })
      expect(refused, model).toMatchObject({ field: 'top_p', reason: PROVIDER_REFUSES_VALUE })
      expect(refused?.message).toContain(model)
      expect(refused?.message).toContain('not both')
    }
  })

  it('one of them neutral, or alone: sent as before', () => {
    for (const model of ONE) {
      expect(build(model, { temperature: 0.7, topP: 1 }), model).toMatchObject({ temperature: 0.7 })
      expect(build(model, { temperature: 1, topP: 0.9 })).not.toHaveProperty('temperature')
      expect(build(model, { temperature: 1, topP: 0.9 })['top_p']).toBe(0.9)
    }
  })

  it('earlier models take both', () => {
    for (const model of BOTH) {
      expect(build(model, { temperature: 0.7, topP: 0.9 }), model).toMatchObject({
        temperature: 0.7,
        top_p: 0.9,
      })
    }
  })
})

describe('a prefill (a last message of the assistant) on Claude 4.6 and later', () => {
  const REFUSE = [
    'claude-opus-4-6',
    'claude-sonnet-4-6',
    'claude-opus-4-7',
    'anthropic.claude-opus-4-7',
    'claude-sonnet-5',
    'claude-fable-5',
  ]
  const TAKE = [
    'claude-sonnet-4-5',
    'claude-haiku-4-5',
    'claude-opus-4-1-20250805',
    'claude-sonnet-4-20250514',
    'claude-3-7-sonnet-20250219',
    'claude',
  ]

  it('is refused before sending, naming messages and the model, whatever reasoning_effort says', () => {
    for (const model of REFUSE) {
      for (const extra of [undefined, { reasoning_effort: 'none' }, { reasoning_effort: 'low' }]) {
        const refused = refusal(model, { messages: prefill, maxTokens: 4000, extra })
        expect(refused, `${model} ${JSON.stringify(extra)}`).toMatchObject({
          field: 'messages',
          reason: PROVIDER_REFUSES_VALUE,
        })
        expect(refused?.message).toContain(model)
        expect(refused?.message).toContain('end with a user message')
        // Turning thinking off does not make it take one.
        expect(refused?.message).not.toContain('reasoning_effort "none"')
      }
    }
  })

  it('goes to earlier models as before', () => {
    for (const model of TAKE) {
      const turns = build(model, { messages: prefill })['messages'] as { role: string }[]
      expect(turns.at(-1)?.role, model).toBe('assistant')
    }
  })
})
