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
 * Claude thinks only when the request turns thinking on (docs.claude.com,
 * "Extended thinking": `thinking: {type: "enabled", budget_tokens}`;
 * "Adaptive thinking": `{type: "adaptive"}` with `output_config.effort`,
 * Claude 4.6 and later, the only form Opus 4.7 and later take). The builder
 * refused `extra.reasoning_effort` and had no other way to ask: against the
 * real API no `thinking` block ever came from Claude. It now turns thinking
 * on, with Google's budgets for Gemini 2.5 on the models that take a budget.
 */
const anthropic = dialects.anthropic
const fakes = useFakes()

const build = (
  extra: Record<string, unknown> | undefined,
  model = 'claude-sonnet-4-5-20250929',
  fields: Partial<ChatRequest> = {},
) =>
  anthropic.buildRequest({ messages: [user('why?')], maxTokens: 32000, extra, ...fields }, model)
    .body as Record<string, unknown>

function refusal(run: () => unknown): { field?: string; message?: string } {
  try {
    run()
  } catch (error) {
    expect(isInvalidChatRequest(error)).toBe(true)
    return error as { field: string; message: string }
  }
  throw new Error('not refused')
}

describe('reasoning_effort to Anthropic', () => {
  it('is a thinking budget before Claude 4.6: 1024 for minimal and low, 8192 medium, 24576 high', () => {
    const budgets = { minimal: 1024, low: 1024, medium: 8192, high: 24576 }
    for (const [effort, budget] of Object.entries(budgets)) {
      const body = build({ reasoning_effort: effort })
      expect(body['thinking'], effort).toEqual({ type: 'enabled', budget_tokens: budget })
      expect(body['output_config']).toBeUndefined()
    }
    for (const model of [
      'claude-3-7-sonnet-20250219',
      'claude-sonnet-4-20250514',
      'claude-opus-4-1',
      'claude-haiku-4-5',
      'my-proxy-alias',
    ]) {
      expect(build({ reasoning_effort: 'low' }, model)['thinking'], model).toEqual({
        type: 'enabled',
        budget_tokens: 1024,
      })
    }
  })

  it('is adaptive thinking with its effort from Claude 4.6 on, the summary asked for', () => {
    for (const model of [
      'claude-opus-4-6',
      'claude-sonnet-4-6',
      'anthropic.claude-opus-4-7',
      'claude-sonnet-5',
    ]) {
      const body = build({ reasoning_effort: 'minimal' }, model)
      expect(body['thinking'], model).toEqual({ type: 'adaptive', display: 'summarized' })
      expect(body['output_config'], model).toEqual({ effort: 'low' })
    }
    for (const effort of ['low', 'medium', 'high', 'xhigh']) {
      expect(build({ reasoning_effort: effort }, 'claude-opus-4-7')['output_config']).toEqual({
        effort,
      })
    }
  })

  // OpenAI's ReasoningEffort took `max` (openai 6.49); Anthropic's effort
  // has it on every model of adaptive thinking (platform.claude.com,
  // "Effort": Opus and Sonnet 4.6 and later), `xhigh` from Opus 4.7 and
  // Sonnet 5 on. `max` was refused as no level at all, on every model.
  it('max is Anthropic’s max effort from Claude 4.6 on; xhigh refused, naming the field, on Opus and Sonnet 4.6', async () => {
    for (const model of [
      'claude-opus-4-6',
      'claude-sonnet-4-6',
      'anthropic.claude-opus-4-7',
      'claude-sonnet-5',
      'claude-fable-5-1',
    ]) {
      const body = build({ reasoning_effort: 'max' }, model)
      expect(body['thinking'], model).toEqual({ type: 'adaptive', display: 'summarized' })
      expect(body['output_config'], model).toEqual({ effort: 'max' })
    }
    for (const model of ['claude-opus-4-6', 'us.anthropic.claude-sonnet-4-6']) {
      const refused = refusal(() => build({ reasoning_effort: 'xhigh' }, model))
      expect(refused, model).toMatchObject({ field: 'reasoning_effort' })
      expect(refused.message).toContain('takes no xhigh effort')
    }
    expect(build({ reasoning_effort: 'xhigh' }, 'claude-opus-4-8')['output_config']).toEqual({
      effort: 'xhigh',
    })
    // A budget model has no level above high: refused as xhigh is.
    for (const model of ['claude-sonnet-4-5', 'claude-opus-4-5', 'my-proxy-alias']) {
      const refused = refusal(() => build({ reasoning_effort: 'max' }, model))
      expect(refused, model).toMatchObject({ field: 'reasoning_effort' })
      expect(refused.message).toContain('max has none')
    }
    // Sent, the fake (which refuses a level the model lacks, as Anthropic
    // does) answers it, with the thinking.
    const fake = await fakes.start({ dialect: 'anthropic' })
    fake.setReply(reply.text('Pick B.', { thinking: 'weighing it', signature: 'sig' }))
    const answer = await callModel({
      models: [fakes.adapterFor('anthropic', fake.baseURL, 'claude-opus-4-6')],
      request: { messages: [user('A or B?')], maxTokens: 2048, extra: { reasoning_effort: 'max' } },
    })
    expect(answer.content.map((b) => b.type)).toEqual(['thinking', 'text'])
    expect(fake.requests.at(-1)!.body).toMatchObject({ output_config: { effort: 'max' } })
  })

  it('a level the model lacks is refused last, as a value only that model refuses, whatever Anthropic refuses beside thinking', () => {
    for (const [model, effort, fields] of [
      ['claude-sonnet-4-6', 'xhigh', { temperature: 0.5 }],
      [
        'claude-3-7-sonnet-20250219',
        'max',
        { messages: [user('why?'), { role: 'assistant', content: 'Because' }] },
      ],
      ['claude-sonnet-4-5-20250929', 'xhigh', { maxTokens: 100 }],
    ] as const) {
      const refused = refusal(() =>
        build({ reasoning_effort: effort }, model, fields as Partial<ChatRequest>),
      ) as { field?: string; reason?: string }
      // Not `temperature`, `messages` or `max_tokens`: those are refused only
      // beside thinking, which a level the model lacks never turns on.
      expect(refused.field, model).toBe('reasoning_effort')
      expect(refused.reason, model).toBe(PROVIDER_REFUSES_VALUE)
    }
  })

  it('none turns nothing on', () => {
    for (const model of ['claude-sonnet-4-5', 'claude-opus-4-6']) {
      const body = build({ reasoning_effort: 'none' }, model)
      expect(body['thinking']).toBeUndefined()
      expect(body['output_config']).toBeUndefined()
    }
  })

  it('refuses, naming the field, what Anthropic would answer 400', () => {
    expect(refusal(() => build({ reasoning_effort: 'max' }))).toMatchObject({
      field: 'reasoning_effort',
    })
    expect(refusal(() => build({ reasoning_effort: 3 }))).toMatchObject({
      field: 'reasoning_effort',
    })
    expect(refusal(() => build({ reasoning_effort: 'xhigh' }))).toMatchObject({
      field: 'reasoning_effort',
    })
    // The budget must be below max_tokens; a smaller one is not made up.
    expect(
      refusal(() => build({ reasoning_effort: 'medium' }, undefined, { maxTokens: 8192 })),
    ).toMatchObject({ field: 'max_tokens' })
    expect(
      build({ reasoning_effort: 'medium' }, undefined, { maxTokens: 8193 })['thinking'],
    ).toEqual({ type: 'enabled', budget_tokens: 8192 })
    for (const model of ['claude-sonnet-4-5', 'claude-opus-4-6']) {
      expect(
        refusal(() => build({ reasoning_effort: 'low' }, model, { temperature: 0.3 })),
      ).toMatchObject({ field: 'temperature' })
      expect(refusal(() => build({ reasoning_effort: 'low' }, model, { topP: 0.9 }))).toMatchObject(
        { field: 'top_p' },
      )
    }
    // A forced tool call goes with adaptive thinking (Claude skips the
    // thinking), not with a budget (docs.claude.com, "Thinking with tool use").
    for (const choice of ['required', { type: 'function', function: { name: 'f' } }]) {
      const forced = (model: string) =>
        build({ reasoning_effort: 'low', tool_choice: choice }, model, {
          tools: [{ name: 'f', parameters: { type: 'object' } }],
        })
      expect(refusal(() => forced('claude-sonnet-4-5'))).toMatchObject({ field: 'tool_choice' })
      expect(forced('claude-opus-4-6')).toMatchObject({
        thinking: { type: 'adaptive' },
        tool_choice: { type: choice === 'required' ? 'any' : 'tool' },
      })
    }
    // What goes with thinking: temperature 1, top_p from 0.95, auto and none.
    const body = build({ reasoning_effort: 'low', tool_choice: 'auto' }, undefined, {
      temperature: 1,
      topP: 0.95,
      tools: [{ name: 'f', parameters: { type: 'object' } }],
    })
    expect(body['thinking']).toEqual({ type: 'enabled', budget_tokens: 1024 })
  })

  it('refuses a forced tool call on the models whose thinking is always on (Opus 5.5, Fable 5.1, …)', () => {
    // docs.claude.com, "What's new in Claude Opus 5.5": forced tool use
    // returns a 400 on Opus and Sonnet 5.5, Fable and Mythos 5.1 (and later),
    // adaptive thinking or not; it went out and came back as that 400.
    const tools = [{ name: 'f', parameters: { type: 'object' } }]
    const loop = {
      tools,
      messages: [
        user('Weather?'),
        { role: 'assistant', content: [{ type: 'tool_call', id: 't1', name: 'f', arguments: {} }] },
        { role: 'tool', content: [{ type: 'tool_result', toolCallId: 't1', content: 'ok' }] },
      ],
    } as Partial<ChatRequest>
    const models = [
      'claude-opus-5-5',
      'claude-sonnet-5-5',
      'claude-fable-5-1',
      'claude-mythos-5-1',
      'anthropic.claude-opus-5-5',
      'claude-opus-6',
      'claude-fable-5-2',
    ]
    for (const model of models) {
      for (const choice of ['required', { type: 'function', function: { name: 'f' } }]) {
        const extra = { reasoning_effort: 'high', tool_choice: choice }
        expect(
          refusal(() => build(extra, model, { tools })),
          model,
        ).toMatchObject({
          field: 'tool_choice',
        })
        // A tool loop's continuation, sent without thinking, thinks all the same there.
        expect(
          refusal(() => build(extra, model, loop)),
          model,
        ).toMatchObject({
          field: 'tool_choice',
        })
        // So does a request that asks for no thinking: these models think anyway.
        for (const none of [
          { tool_choice: choice },
          { reasoning_effort: 'none', tool_choice: choice },
        ]) {
          expect(
            refusal(() => build(none, model, { tools })),
            model,
          ).toMatchObject({
            field: 'tool_choice',
          })
        }
      }
      expect(
        build({ reasoning_effort: 'high', tool_choice: 'auto' }, model, { tools }),
      ).toMatchObject({ thinking: { type: 'adaptive' }, tool_choice: { type: 'auto' } })
    }
    // The earlier versions of those lines, and Haiku, take one.
    for (const model of [
      'claude-opus-5',
      'claude-sonnet-5',
      'claude-fable-5',
      'claude-haiku-5-5',
    ]) {
      const extra = { reasoning_effort: 'high', tool_choice: 'required' }
      expect(build(extra, model, { tools }), model).toMatchObject({
        thinking: { type: 'adaptive' },
        tool_choice: { type: 'any' },
      })
    }
  })

  it('brings the thinking back from the fake, which thinks only when asked; unasked, none is billed', async () => {
    const fake = await fakes.start({ dialect: 'anthropic' })
    fake.setReply(reply.text('Pick B.', { thinking: 'weighing it', signature: 'sig' }))
    const model = fakes.adapterFor('anthropic', fake.baseURL, 'claude-sonnet-4-5')
    const request: ChatRequest = { messages: [user('A or B?')], maxTokens: 2048 }
    const asked = await callModel({
      models: [model],
      request: { ...request, extra: { reasoning_effort: 'low' } },
    })
    expect(asked.content[0]).toEqual({
      type: 'thinking',
      thinking: 'weighing it',
      signature: 'sig',
      signedBy: 'claude-sonnet-4-5@anthropic',
    })
    expect(asked.text).toBe('Pick B.')
    const unasked = await callModel({ models: [model], request })
    expect(unasked.content.map((b) => b.type)).toEqual(['text'])
    expect(unasked.usage.outputTokens).toBeLessThan(asked.usage.outputTokens)
  })
})
