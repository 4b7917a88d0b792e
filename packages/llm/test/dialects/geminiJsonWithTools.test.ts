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
 * Gemini before 3 answers a request with tools and a JSON response_format
 * (`responseMimeType: "application/json"`) 400 INVALID_ARGUMENT "Function
 * calling with a response mime type: 'application/json' is unsupported" —
 * what the OpenAI Agents SDK sends for an agent with an `output_type` and
 * tools. The dialect sent it: a round trip for a bad request no fallback
 * follows. Gemini 3 takes both.
 */
const fakes = useFakes()

const SCHEMA = {
  type: 'json_schema',
  json_schema: {
    name: 'plan',
    schema: { type: 'object', properties: { step: { type: 'string' } } },
  },
}

const base: ChatRequest = {
  messages: [user('plan it')],
  maxTokens: 64,
  tools: [{ name: 'lookup', parameters: { type: 'object', properties: {} } }],
  extra: { response_format: SCHEMA },
}

function refusal(model: string, request: Partial<ChatRequest> = {}) {
  try {
    dialects.gemini.buildRequest({ ...base, ...request }, model)
  } catch (error) {
    return error
  }
  return undefined
}

describe('Gemini: tools beside a JSON response_format', () => {
  it('to Gemini 2.5 is refused before anything is sent, naming the field and the model', async () => {
    const fake = await fakes.start({ dialect: 'gemini', reply: reply.text('{"step":"a"}') })
    const refused = await callModel({
      models: [fakes.adapterFor('gemini', fake.baseURL, 'gemini-2.5-flash')],
      request: base,
      limits: { admission: false },
    }).then(
      () => undefined,
      (error: unknown) => error,
    )
    expect(isInvalidChatRequest(refused)).toBe(true)
    expect(refused).toMatchObject({ field: 'response_format', reason: PROVIDER_REFUSES_VALUE })
    expect((refused as Error).message).toContain('gemini-2.5-flash')
    expect(fake.requests).toHaveLength(0)
  })

  it('a Gemini 3 fallback takes it and answers', async () => {
    const primary = await fakes.start({
      dialect: 'openai',
      reply: reply.error(401, { error: { message: 'bad key', code: 'invalid_api_key' } }),
    })
    const gemini = await fakes.start({ dialect: 'gemini', reply: reply.text('{"step":"a"}') })
    const answer = await callModel({
      models: [
        fakes.adapterFor('openai', primary.baseURL, 'gpt-4o-mini'),
        fakes.adapterFor('gemini', gemini.baseURL, 'gemini-3-flash-preview'),
      ],
      request: base,
      limits: { admission: false },
    })
    expect(answer).toMatchObject({ model: 'gemini-3-flash-preview', text: '{"step":"a"}' })
    expect(gemini.requests[0]?.body).toMatchObject({
      generationConfig: { responseMimeType: 'application/json' },
      tools: [{ functionDeclarations: [{ name: 'lookup' }] }],
    })
  })

  it('every model before 3 refuses it, json_object too; a name without a version does not', () => {
    for (const model of ['gemini-2.0-flash', 'models/gemini-2.5-pro', 'gemini-1.5-flash']) {
      expect(refusal(model), model).toMatchObject({ field: 'response_format' })
    }
    const jsonObject = { extra: { response_format: { type: 'json_object' } } }
    expect(refusal('gemini-2.5-flash', jsonObject)).toMatchObject({ field: 'response_format' })
    expect(refusal('tuned-model')).toBeUndefined()
    expect(refusal('gemini-3.1-pro-preview')).toBeUndefined()
  })

  it('without tools, with a text format, or with tool_choice none (no call possible), it goes', () => {
    expect(refusal('gemini-2.5-flash', { tools: [] })).toBeUndefined()
    expect(refusal('gemini-2.5-flash', { extra: { response_format: { type: 'text' } } })).toBe(
      undefined,
    )
    expect(
      refusal('gemini-2.5-flash', { extra: { response_format: SCHEMA, tool_choice: 'none' } }),
    ).toBeUndefined()
  })

  it("the request's own refusals come first", () => {
    expect(
      refusal('gemini-2.5-flash', { extra: { response_format: SCHEMA, seed: 2 ** 40 } }),
    ).toMatchObject({ field: 'seed' })
  })
})
