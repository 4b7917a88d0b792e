import type { ProviderDialect } from '@hourglass/testkit'
import type OpenAI from 'openai'
import { describe, expect, it } from 'vitest'
import { dialectGateway } from './support/dialectGateway.js'

/**
 * OpenAI's `developer` role (its newer name for system instructions, what
 * openai-node's examples write) through the official client to each
 * dialect's fake: it is a system message everywhere — in place for the
 * OpenAI-compatible dialects, in Anthropic's `system` and Gemini's
 * `systemInstruction` (which have no system turn) wherever it stood.
 */
const DIALECTS: ProviderDialect[] = ['openai', 'qwen', 'anthropic', 'gemini']
const gateway = dialectGateway(DIALECTS)

const conversation: OpenAI.ChatCompletionMessageParam[] = [
  { role: 'developer', content: 'Be brief.' },
  { role: 'user', content: 'a' },
  { role: 'assistant', content: 'b' },
  { role: 'developer', content: [{ type: 'text', text: 'Now answer in French.' }] },
  { role: 'user', content: 'c' },
]

async function sent(dialect: ProviderDialect): Promise<Record<string, unknown>> {
  const fake = gateway.fake(dialect)
  const before = fake.requests.length
  await gateway.client.chat.completions.create({ model: `m-${dialect}`, messages: conversation })
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
