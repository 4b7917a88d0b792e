import { reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { anthropic } from '../../src/adapters/anthropic.js'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import type { CallModelOptions } from '../../src/call/CallModelOptions.js'
import { callModel } from '../../src/call/callModel.js'
import { isInvalidChatRequest } from '../../src/errors/InvalidChatRequestError.js'
import { useFakes, user } from './support/fakes.js'

const fakes = useFakes()

async function refusal(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (error: unknown) => error,
  )
}

/**
 * A field `ChatRequest` does not have was dropped without a word: an
 * openai-node user's `response_format` (or `tool_choice`, `seed`, `top_p`)
 * at the top of `request`, or an Anthropic SDK user's `system`, went
 * nowhere — the model answered prose where JSON was asked for, in English
 * where French was — while every other misnamed option is refused.
 */
describe('request fields ChatRequest does not have are refused by name, before sending', () => {
  it('OpenAI wire names at the top of request: InvalidChatRequestError naming the field and where it goes, nothing sent', async () => {
    const fake = await fakes.start({ dialect: 'openai', reply: reply.text('{"ok":true}') })
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'gpt-4o' }),
    )
    const cases: Array<[Record<string, unknown>, string, RegExp]> = [
      [{ response_format: { type: 'json_object' } }, 'response_format', /extra/],
      [{ tool_choice: 'none' }, 'tool_choice', /extra/],
      [{ seed: 7 }, 'seed', /extra/],
      [{ top_p: 0.1 }, 'top_p', /topP/],
      [{ max_tokens: 5 }, 'max_tokens', /maxTokens/],
      // Not "extra: { model }": a dialect never lets extra overwrite its model.
      [{ model: 'gpt-4o-mini' }, 'model', /adapter's model/],
    ]
    for (const [fields, field, hint] of cases) {
      const refused = await refusal(
        callModel({
          models: [model],
          request: { messages: [user('hi')], maxTokens: 50, ...fields },
          limits: { admission: false },
        } as CallModelOptions),
      )
      expect(isInvalidChatRequest(refused), field).toBe(true)
      expect(refused).toMatchObject({ field })
      expect((refused as Error).message).toMatch(hint)
    }
    expect(fake.requests).toHaveLength(0)
  })

  it("an Anthropic SDK user's system prompt at the top of request is refused, naming the system message", async () => {
    const fake = await fakes.start({ dialect: 'anthropic' })
    const model = fakes.adapter(
      anthropic({ baseURL: fake.baseURL, apiKey: 'sk', model: 'claude-sonnet-4-5' }),
    )
    const refused = await refusal(
      callModel({
        models: [model],
        request: { system: 'Answer in French.', messages: [user('hi')], maxTokens: 50 },
        limits: { admission: false },
      } as CallModelOptions),
    )
    expect(isInvalidChatRequest(refused)).toBe(true)
    expect(refused).toMatchObject({ field: 'system' })
    expect((refused as Error).message).toMatch(/role: 'system'/)
    expect(fake.requests).toHaveLength(0)
  })

  it("an OpenAI-shaped tool history (message-level tool_calls, tool_call_id) is refused on every wire — Anthropic's sent the result as user text, the call gone", async () => {
    const fake = await fakes.start({ dialect: 'anthropic' })
    const model = fakes.adapter(
      anthropic({ baseURL: fake.baseURL, apiKey: 'sk', model: 'claude-sonnet-4-5' }),
    )
    const messages = [
      user('what is 6*7?'),
      {
        role: 'assistant',
        content: 'computing',
        tool_calls: [{ id: 'c1', type: 'function', function: { name: 'calc', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: 'c1', content: '42' },
    ]
    const refused = await refusal(
      callModel({
        models: [model],
        request: { messages, maxTokens: 50, tools: [{ name: 'calc', parameters: {} }] },
        limits: { admission: false },
      } as unknown as CallModelOptions),
    )
    expect(isInvalidChatRequest(refused)).toBe(true)
    expect(refused).toMatchObject({ field: 'messages[1].tool_calls' })
    expect(fake.requests).toHaveLength(0)
  })

  it('the fields ChatRequest has, and an unknown one left undefined, still go through', async () => {
    const fake = await fakes.start({ dialect: 'openai', reply: reply.text('hello') })
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'gpt-4o' }),
    )
    const answer = await callModel({
      models: [model],
      request: {
        messages: [user('hi')],
        maxTokens: 50,
        temperature: 0.2,
        topP: 0.9,
        stop: ['END'],
        stream: false,
        metadata: { tenant: 't' },
        extra: { seed: 7 },
        response_format: undefined,
      },
      limits: { admission: false },
    } as CallModelOptions)
    expect(answer.text).toBe('hello')
    expect(fake.requests[0]?.body).toMatchObject({ seed: 7, temperature: 0.2, top_p: 0.9 })
  })
})
