import { reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { callModel } from '../../src/call/callModel.js'
import { dialects } from '../../src/dialects/dialects.js'
import {
  isInvalidChatRequest,
  PROVIDER_REFUSES_VALUE,
} from '../../src/errors/InvalidChatRequestError.js'
import type { ChatMessage, ChatRequest } from '../../src/types.js'
import { useFakes, user } from '../call/support/fakes.js'

/**
 * Thinking came with Claude 3.7 Sonnet: Claude 3 Opus, Sonnet and Haiku and
 * 3.5 Sonnet and Haiku answer 400 "'claude-3-5-haiku-20241022' does not
 * support thinking." to a `thinking` of type `enabled` or `adaptive`
 * (anthropics/claude-code#2245). `reasoning_effort` sent them a budget, and
 * the call failed with that 400, which goes to no fallback. It is now
 * refused before sending, naming the field and the model, as a value only
 * these models refuse (`provider_value`).
 */
const fakes = useFakes()

/** Claude 3 and 3.5, under Anthropic's, Bedrock's and Vertex's names. */
const THINKLESS = [
  'claude-3-5-haiku-20241022',
  'claude-3-5-haiku-latest',
  'claude-3-opus-20240229',
  'claude-3-haiku-20240307',
  'claude-3-sonnet-20240229',
  'claude-3-5-sonnet-20241022',
  'anthropic.claude-3-5-haiku-20241022-v1:0',
  'us.anthropic.claude-3-opus-20240229-v1:0',
  'anthropic.claude-3-5-sonnet-20241022-v2:0',
  'claude-3-5-haiku@20241022',
  'claude-3-5-sonnet-v2@20241022',
]

/** They think: Claude 3.7 Sonnet on a budget, and names that say no version, taken at their word. */
const THINKING = [
  'claude-3-7-sonnet-20250219',
  'us.anthropic.claude-3-7-sonnet-20250219-v1:0',
  'claude-3-7-sonnet@20250219',
  'claude-sonnet-latest',
  'claude',
  'my-proxy-alias',
]

const EFFORTS = ['minimal', 'low', 'medium', 'high', 'xhigh']

function build(model: string, fields: Partial<ChatRequest>): Record<string, unknown> {
  return dialects.anthropic.buildRequest(
    { maxTokens: 32000, messages: [user('why?')], ...fields },
    model,
  ).body as Record<string, unknown>
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

describe('reasoning_effort to a Claude model that does not think', () => {
  it('is refused before sending, naming reasoning_effort, the model and the remedy', () => {
    for (const model of THINKLESS) {
      for (const effort of EFFORTS) {
        const refused = refusal(model, { extra: { reasoning_effort: effort } })
        expect(refused, `${model} ${effort}`).toMatchObject({
          field: 'reasoning_effort',
          reason: PROVIDER_REFUSES_VALUE,
        })
        expect(refused?.message).toContain(model)
        expect(refused?.message).toContain('does not think')
        expect(refused?.message).toContain('"none"')
      }
    }
  })

  it('none, or no effort, goes without thinking', () => {
    for (const model of THINKLESS) {
      for (const extra of [undefined, { reasoning_effort: 'none' }, { reasoning_effort: null }]) {
        const body = build(model, { extra })
        expect(body, `${model} ${JSON.stringify(extra)}`).not.toHaveProperty('thinking')
        expect(body).not.toHaveProperty('output_config')
      }
    }
  })

  it('is refused as such where a refusal beside thinking would have come first: it is no remedy', () => {
    const tools = [{ name: 'look', parameters: { type: 'object' } }]
    const prefill: ChatMessage[] = [user('JSON please'), { role: 'assistant', content: '{' }]
    for (const fields of [
      { maxTokens: 500 },
      { temperature: 0.5 },
      { topP: 0.5 },
      { messages: prefill },
      { tools, extra: { reasoning_effort: 'low', tool_choice: 'required' } },
    ] satisfies Partial<ChatRequest>[]) {
      const refused = refusal('claude-3-5-haiku-20241022', {
        extra: { reasoning_effort: 'low' },
        ...fields,
      })
      expect(refused, JSON.stringify(fields)).toMatchObject({
        field: 'reasoning_effort',
        reason: PROVIDER_REFUSES_VALUE,
      })
    }
  })

  it("hides none of the request's own refusals: checked after them", () => {
    const model = 'claude-3-5-haiku-20241022'
    const seed = refusal(model, { extra: { reasoning_effort: 'low', seed: 1 } })
    expect(seed?.field).toBe('seed')
    expect(seed?.reason).toBeUndefined()
    const ids = refusal(model, {
      extra: { reasoning_effort: 'low', user: 'a', safety_identifier: 'b' },
    })
    expect(ids?.field).toBe('user')
    expect(ids?.reason).toBeUndefined()
    // An effort that is none of the values is the request's own error.
    const wrong = refusal(model, { extra: { reasoning_effort: 'extreme' } })
    expect(wrong?.field).toBe('reasoning_effort')
    expect(wrong?.reason).toBeUndefined()
  })

  it('a tool loop that continues an unthought turn goes, as it does to any model: no thinking is sent', () => {
    const messages: ChatMessage[] = [
      user('weather?'),
      {
        role: 'assistant',
        content: [{ type: 'tool_call', id: 'call_1', name: 'weather', arguments: {} }],
      },
      { role: 'tool', content: [{ type: 'tool_result', toolCallId: 'call_1', content: 'sunny' }] },
    ]
    const body = build('claude-3-5-haiku-20241022', {
      messages,
      extra: { reasoning_effort: 'low' },
    })
    expect(body).not.toHaveProperty('thinking')
  })

  it('Claude 3.7 Sonnet, and a name that says no version, think on a budget as before', () => {
    for (const model of THINKING) {
      expect(build(model, { extra: { reasoning_effort: 'low' } })['thinking'], model).toEqual({
        type: 'enabled',
        budget_tokens: 1024,
      })
    }
  })

  it("a caller's own thinking field is refused before sending, whatever the model", () => {
    for (const model of ['claude-3-5-haiku-20241022', 'claude-3-7-sonnet-20250219']) {
      for (const thinking of [{ type: 'enabled', budget_tokens: 1024 }, { type: 'adaptive' }]) {
        expect(refusal(model, { extra: { thinking } })?.field, model).toBe('thinking')
      }
    }
  })
})

describe('reasoning_effort to Claude 3.5 Haiku through the anthropic adapter', () => {
  it('is refused before anything is sent; none gets the answer', async () => {
    const fake = await fakes.start({ dialect: 'anthropic' })
    fake.setReply(reply.text('Because.'))
    const model = fakes.adapterFor('anthropic', fake.baseURL, 'claude-3-5-haiku-20241022')
    const request: ChatRequest = { messages: [user('why?')], maxTokens: 2048 }
    const refused = await callModel({
      models: [model],
      request: { ...request, extra: { reasoning_effort: 'low' } },
    }).catch((error: unknown) => error)
    expect(isInvalidChatRequest(refused)).toBe(true)
    expect(refused).toMatchObject({ field: 'reasoning_effort', reason: PROVIDER_REFUSES_VALUE })
    expect(fake.requests).toHaveLength(0)

    const answered = await callModel({
      models: [model],
      request: { ...request, extra: { reasoning_effort: 'none' } },
    })
    expect(answered.text).toBe('Because.')
    expect(fake.requests).toHaveLength(1)
    expect(fake.requests[0]?.body).not.toHaveProperty('thinking')
  })

  it('Claude 3.7 Sonnet thinks through the fake, on a budget', async () => {
    const fake = await fakes.start({ dialect: 'anthropic' })
    fake.setReply(reply.text('Because.', { thinking: 'hm', signature: 'sig' }))
    const model = fakes.adapterFor('anthropic', fake.baseURL, 'claude-3-7-sonnet-20250219')
    const answered = await callModel({
      models: [model],
      request: { messages: [user('why?')], maxTokens: 2048, extra: { reasoning_effort: 'low' } },
    })
    expect(answered.content[0]).toMatchObject({ type: 'thinking', thinking: 'hm' })
    expect(fake.requests[0]?.body).toMatchObject({
      thinking: { type: 'enabled', budget_tokens: 1024 },
    })
  })
})
