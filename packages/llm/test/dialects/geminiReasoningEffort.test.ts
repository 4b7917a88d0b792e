import { reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { callModel } from '../../src/call/callModel.js'
import { dialects } from '../../src/dialects/dialects.js'
import { isInvalidChatRequest } from '../../src/errors/InvalidChatRequestError.js'
import type { ChatRequest } from '../../src/types.js'
import { useFakes, user } from '../call/support/fakes.js'

/**
 * Gemini thinks whether or not it is asked to, but sends its thought
 * summaries only to a request that sets
 * `generationConfig.thinkingConfig.includeThoughts: true`
 * (ai.google.dev/gemini-api/docs/thinking, "Thought summaries"). The builder
 * never set it: against the real API no `thinking` block ever came from
 * Gemini. `extra.reasoning_effort`, OpenAI's field, asks for the thinking,
 * translated as Google's own OpenAI compatibility layer does
 * (ai.google.dev/gemini-api/docs/openai, "Thinking"): a `thinkingBudget` of
 * 1,024 / 1,024 / 8,192 / 24,576 tokens for minimal / low / medium / high and
 * 0 for none on Gemini 2.5, a `thinkingLevel` on Gemini 3 and later.
 */
const gemini = dialects.gemini
const fakes = useFakes()

const build = (extra: Record<string, unknown> | undefined, model = 'gemini-2.5-flash') =>
  gemini.buildRequest({ messages: [user('why?')], maxTokens: 2000, extra }, model).body as {
    generationConfig: Record<string, unknown>
  }
const thinkingOf = (extra: Record<string, unknown> | undefined, model?: string) =>
  build(extra, model).generationConfig['thinkingConfig']

describe('reasoning_effort to Gemini', () => {
  it('is a thinking budget with the thoughts included on Gemini 2.5, as Google maps it', () => {
    expect(thinkingOf({ reasoning_effort: 'minimal' })).toEqual({
      thinkingBudget: 1024,
      includeThoughts: true,
    })
    expect(thinkingOf({ reasoning_effort: 'low' })).toEqual({
      thinkingBudget: 1024,
      includeThoughts: true,
    })
    expect(thinkingOf({ reasoning_effort: 'medium' })).toEqual({
      thinkingBudget: 8192,
      includeThoughts: true,
    })
    expect(thinkingOf({ reasoning_effort: 'high' }, 'models/gemini-2.5-pro')).toEqual({
      thinkingBudget: 24576,
      includeThoughts: true,
    })
    // None turns the thinking off: no thoughts to include.
    expect(thinkingOf({ reasoning_effort: 'none' })).toEqual({ thinkingBudget: 0 })
    // The rest of the config is as it was.
    expect(build({ reasoning_effort: 'low' }).generationConfig['maxOutputTokens']).toBe(2000)
  })

  it('is a thinking level on Gemini 3; a Pro model, which has no minimal level, gets low', () => {
    expect(thinkingOf({ reasoning_effort: 'low' }, 'gemini-3-flash-preview')).toEqual({
      thinkingLevel: 'low',
      includeThoughts: true,
    })
    expect(thinkingOf({ reasoning_effort: 'medium' }, 'gemini-3-flash-preview')).toEqual({
      thinkingLevel: 'medium',
      includeThoughts: true,
    })
    expect(thinkingOf({ reasoning_effort: 'high' }, 'models/gemini-3.1-pro-preview')).toEqual({
      thinkingLevel: 'high',
      includeThoughts: true,
    })
    expect(thinkingOf({ reasoning_effort: 'minimal' }, 'gemini-3-flash-preview')).toEqual({
      thinkingLevel: 'minimal',
      includeThoughts: true,
    })
    expect(thinkingOf({ reasoning_effort: 'minimal' }, 'gemini-3-pro-preview')).toEqual({
      thinkingLevel: 'low',
      includeThoughts: true,
    })
    // Gemini 3's thinking cannot be turned off: none is its least, without the thoughts.
    expect(thinkingOf({ reasoning_effort: 'none' }, 'gemini-3-flash-preview')).toEqual({
      thinkingLevel: 'minimal',
    })
    expect(thinkingOf({ reasoning_effort: 'none' }, 'gemini-3.1-pro-preview')).toEqual({
      thinkingLevel: 'low',
    })
    // Gemini 3.7 and 3.8 Flash and Gemini 4 have no minimal level either
    // (3.7 Flash: low, medium and high); Gemini 3.5 and 3.6 Flash have.
    for (const model of [
      'gemini-3.7-flash',
      'models/gemini-3.7-flash',
      'gemini-3.8-flash',
      'gemini-4-carbon',
      'models/gemini-4-neon',
    ]) {
      expect(thinkingOf({ reasoning_effort: 'none' }, model), model).toEqual({
        thinkingLevel: 'low',
      })
      expect(thinkingOf({ reasoning_effort: 'minimal' }, model), model).toEqual({
        thinkingLevel: 'low',
        includeThoughts: true,
      })
    }
    for (const model of ['gemini-3.5-flash-lite', 'gemini-3.6-flash']) {
      expect(thinkingOf({ reasoning_effort: 'none' }, model), model).toEqual({
        thinkingLevel: 'minimal',
      })
    }
    // OpenAI's deepest effort is Gemini 4's deepest level.
    expect(thinkingOf({ reasoning_effort: 'xhigh' }, 'gemini-4-neon')).toEqual({
      thinkingLevel: 'xhigh',
      includeThoughts: true,
    })
  })

  it('sends no thinking config when none is asked for', () => {
    expect(thinkingOf(undefined)).toBeUndefined()
    expect(thinkingOf({ reasoning_effort: null })).toBeUndefined()
  })

  it('refuses a value Google does not define, naming the field, before anything is sent', () => {
    // xhigh: a level on Gemini 3 and later, no budget on Gemini 2.5.
    for (const effort of ['xhigh', 'LOW', '', 3]) {
      let error: unknown
      try {
        build({ reasoning_effort: effort })
      } catch (e) {
        error = e
      }
      expect(isInvalidChatRequest(error), String(effort)).toBe(true)
      expect(error).toMatchObject({ field: 'reasoning_effort' })
      expect((error as Error).message).toContain('none, minimal, low, medium or high')
    }
    expect(() => build({ reasoning_effort: 'LOW' }, 'gemini-4-neon')).toThrow(
      'none, minimal, low, medium, high or xhigh',
    )
    // Gemini 3 has no xhigh level.
    expect(() => build({ reasoning_effort: 'xhigh' }, 'gemini-3-flash-preview')).toThrow(
      'Gemini 3 takes none, minimal, low, medium or high, got "xhigh"',
    )
  })
})

describe('Gemini thinking, asked for with reasoning_effort', () => {
  const request = (extra: ChatRequest['extra']) => ({
    messages: [user('why?')],
    maxTokens: 500,
    extra,
  })
  const options = (baseURL: string) => ({
    models: [fakes.adapterFor('gemini', baseURL, 'gemini-2.5-flash')],
    limits: { admission: false as const },
  })

  it('comes back as thinking blocks, streamed and whole; without it, only the answer', async () => {
    const fake = await fakes.start({
      dialect: 'gemini',
      reply: reply.text('Because.', { thinking: 'let me think it over' }),
    })
    const whole = await callModel({
      ...options(fake.baseURL),
      request: request({ reasoning_effort: 'low' }),
    })
    expect(whole.content[0]).toMatchObject({ type: 'thinking', thinking: 'let me think it over' })
    expect(whole.text).toBe('Because.')

    const stream = callModel({
      ...options(fake.baseURL),
      request: { ...request({ reasoning_effort: 'low' }), stream: true },
    })
    let thought = ''
    for await (const event of stream) if (event.type === 'thinking') thought += event.thinking
    expect(thought).toBe('let me think it over')
    expect((await stream.result).text).toBe('Because.')

    // Not asked for: Gemini thinks (and bills it) but sends no thoughts.
    const plain = await callModel({ ...options(fake.baseURL), request: request(undefined) })
    expect(plain.content.some((b) => b.type === 'thinking')).toBe(false)
    expect(plain.text).toBe('Because.')
    expect(plain.usage?.reasoningTokens).toBeGreaterThan(0)
  })
})
