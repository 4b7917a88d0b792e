import { afterEach, describe, expect, it } from 'vitest'
import { type FakeProvider, startFakeProvider } from '../../src/providers/index.js'

let fake: FakeProvider | undefined
afterEach(async () => {
  await fake?.close()
  fake = undefined
})

describe('GET …/models answers in the shape of the API asked', () => {
  it('Gemini: {models: [{name: "models/…", …}]} at /v1beta/models', async () => {
    fake = await startFakeProvider({
      dialect: 'gemini',
      models: ['gemini-2.5-flash', 'gemini-3-pro'],
    })
    const res = await fetch(`${fake.baseURL}/models`, { headers: { 'x-goog-api-key': 'k' } })
    const body = (await res.json()) as Record<string, unknown>
    expect(body).toMatchObject({
      models: [
        {
          name: 'models/gemini-2.5-flash',
          displayName: 'gemini-2.5-flash',
          supportedGenerationMethods: expect.arrayContaining(['generateContent']),
        },
        { name: 'models/gemini-3-pro' },
      ],
    })
    expect(body).not.toHaveProperty('data')
  })

  it('Anthropic: {data: [{type: "model", id, display_name, created_at}], has_more, first_id, last_id} at /v1/models', async () => {
    fake = await startFakeProvider({ dialect: 'anthropic', models: ['claude-a', 'claude-b'] })
    const res = await fetch(`${fake.baseURL}/v1/models`, {
      headers: { 'x-api-key': 'k', 'anthropic-version': '2023-06-01' },
    })
    const body = (await res.json()) as { data: Record<string, unknown>[] }
    expect(body).toEqual({
      data: [
        { type: 'model', id: 'claude-a', display_name: 'claude-a', created_at: expect.any(String) },
        { type: 'model', id: 'claude-b', display_name: 'claude-b', created_at: expect.any(String) },
      ],
      has_more: false,
      first_id: 'claude-a',
      last_id: 'claude-b',
    })
    expect(Number.isNaN(Date.parse(body.data[0]!.created_at as string))).toBe(false)
  })

  it('OpenAI-style for the others; an Anthropic client of an openai fake still gets Anthropic’s shape', async () => {
    fake = await startFakeProvider({ dialect: 'qwen', models: ['qwen-plus'] })
    const openai = await (await fetch(`${fake.baseURL}/models`)).json()
    expect(openai).toMatchObject({ object: 'list', data: [{ id: 'qwen-plus', object: 'model' }] })
    const anthropic = await (
      await fetch(`${fake.url}/v1/models`, { headers: { 'anthropic-version': '2023-06-01' } })
    ).json()
    expect(anthropic).toMatchObject({ data: [{ type: 'model', id: 'qwen-plus' }], has_more: false })
  })
})
