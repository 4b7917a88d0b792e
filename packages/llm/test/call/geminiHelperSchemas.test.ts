import { reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { gemini } from '../../src/adapters/gemini.js'
import { callModel } from '../../src/call/callModel.js'
import { useFakes, user } from './support/fakes.js'

const fakes = useFakes()

/** What openai-node 6's `zodResponseFormat(S, 'person').json_schema.schema` and `zodFunction` emit. */
const draft07 = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  type: 'object',
  properties: {
    name: { type: 'string' },
    tags: { anyOf: [{ type: 'array', items: { type: 'string' } }, { type: 'null' }] },
  },
  required: ['name', 'tags'],
  additionalProperties: false,
}

/** What zod 4's `z.toJSONSchema(S)` emits. */
const draft2020 = { ...draft07, $schema: 'https://json-schema.org/draft/2020-12/schema' }

describe('Gemini: schemas from openai-node and zod helpers', () => {
  it('are sent as they are, `$schema` included, in responseJsonSchema and parametersJsonSchema', async () => {
    const fake = await fakes.start({ dialect: 'gemini' })
    fake.enqueue(reply.text('{"name":"a","tags":null}'))
    // Gemini 3: before it, tools beside a JSON response_format are refused (refuseGeminiJsonWithTools).
    const model = fakes.adapter(
      gemini({ baseURL: fake.baseURL, apiKey: 'AIza-1', model: 'gemini-3-flash-preview' }),
    )
    const answer = await callModel({
      models: [model],
      request: {
        messages: [user('hi')],
        maxTokens: 64,
        tools: [{ name: 'save', parameters: draft2020 }],
        extra: {
          response_format: {
            type: 'json_schema',
            json_schema: { name: 'person', strict: true, schema: draft07 },
          },
        },
      },
    })
    expect(answer.text).toBe('{"name":"a","tags":null}')
    const body = fake.requests[0]?.body as {
      generationConfig: Record<string, unknown>
      tools: { functionDeclarations: Record<string, unknown>[] }[]
    }
    // Not the OpenAPI-subset fields, which answer 400 "Unknown name \"$schema\"".
    expect(body.generationConfig).not.toHaveProperty('responseSchema')
    expect(body.generationConfig['responseJsonSchema']).toEqual(draft07)
    expect(body.tools[0]?.functionDeclarations[0]).toEqual({
      name: 'save',
      parametersJsonSchema: draft2020,
    })
  })
})
