import type { FakeProvider, ProviderDialect } from '@hourglass/testkit'
import type OpenAI from 'openai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

/**
 * OpenAI's `developer` role (its newer name for system instructions, what
 * openai-node's examples write) through the official client to each
 * dialect's fake: it is a system message everywhere — in place for the
 * OpenAI-compatible dialects, in Anthropic's `system` and Gemini's
 * `systemInstruction` (which have no system turn) wherever it stood.
 */
const DIALECTS: ProviderDialect[] = ['openai', 'qwen', 'anthropic', 'gemini']
const fakes = new Map<ProviderDialect, FakeProvider>()
let harness: Harness

beforeAll(async () => {
  const providers: Record<string, unknown> = {}
  const models: Record<string, unknown> = {}
  for (const dialect of DIALECTS) {
    const { fake, entry } = await fakeProvider(dialect, ['k'])
    fakes.set(dialect, fake)
    providers[dialect] = entry
    models[`m-${dialect}`] = fallback([dialect, `up-${dialect}`])
  }
  harness = await startHarness({ providers, models })
})

afterAll(async () => {
  await harness.close()
  for (const fake of fakes.values()) await fake.close()
})

const conversation: OpenAI.ChatCompletionMessageParam[] = [
  { role: 'developer', content: 'Be brief.' },
  { role: 'user', content: 'a' },
  { role: 'assistant', content: 'b' },
  { role: 'developer', content: [{ type: 'text', text: 'Now answer in French.' }] },
  { role: 'user', content: 'c' },
]

async function sent(dialect: ProviderDialect): Promise<Record<string, unknown>> {
  const fake = fakes.get(dialect) as FakeProvider
  const before = fake.requests.length
  await harness.client.chat.completions.create({ model: `m-${dialect}`, messages: conversation })
  expect(fake.requests.length).toBe(before + 1)
  return fake.requests.at(-1)?.body as Record<string, unknown>
}

describe('a developer message', () => {
  for (const dialect of ['openai', 'qwen'] as const) {
    it(`reaches ${dialect} as a system message in its place`, async () => {
      expect((await sent(dialect))['messages']).toEqual([
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'a' },
        { role: 'assistant', content: 'b' },
        { role: 'system', content: 'Now answer in French.' },
        { role: 'user', content: 'c' },
      ])
    })
  }

  it('reaches Anthropic in `system`, both in order a blank line apart, the turns without them', async () => {
    const body = await sent('anthropic')
    expect(body['system']).toBe('Be brief.\n\nNow answer in French.')
    expect(body['messages']).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'a' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'b' }] },
      { role: 'user', content: [{ type: 'text', text: 'c' }] },
    ])
  })

  it('reaches Gemini in `systemInstruction`, both in order a blank line apart, the turns without them', async () => {
    const body = await sent('gemini')
    expect(body['systemInstruction']).toEqual({
      parts: [{ text: 'Be brief.\n\nNow answer in French.' }],
    })
    expect(body['contents']).toEqual([
      { role: 'user', parts: [{ text: 'a' }] },
      { role: 'model', parts: [{ text: 'b' }] },
      { role: 'user', parts: [{ text: 'c' }] },
    ])
  })
})
