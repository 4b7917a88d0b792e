import { anthropicErrors, reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { anthropic } from '../../src/adapters/anthropic.js'
import { callModel } from '../../src/call/callModel.js'
import type { ChatMessage } from '../../src/types.js'
import { useFakes } from './support/fakes.js'

const fakes = useFakes()

// A tool-use turn with extended thinking on: Anthropic refuses this turn
// without its signed thinking block in front of the tool_use.
const history: ChatMessage[] = [
  { role: 'user', content: 'Weather in Paris?' },
  {
    role: 'assistant',
    content: [
      { type: 'thinking', thinking: 'I should call the tool.', signature: 'sig-opus-1' },
      { type: 'tool_call', id: 'toolu_1', name: 'weather', arguments: { city: 'Paris' } },
    ],
  },
  { role: 'tool', content: [{ type: 'tool_result', toolCallId: 'toolu_1', content: '18 °C' }] },
]

type Sent = { messages: Array<{ role: string; content: Array<Record<string, unknown>> }> }

describe('a fallback that is the primary model again', () => {
  it('keeps the thinking signatures the primary was sent (another key or endpoint of the same model)', async () => {
    const busy = await fakes.start({ dialect: 'anthropic', reply: anthropicErrors.overloaded() })
    const spare = await fakes.start({ dialect: 'anthropic', reply: reply.text('18 °C in Paris.') })
    const models = [busy, spare].map((fake) =>
      fakes.adapter(anthropic({ baseURL: fake.baseURL, apiKey: 'k', model: 'claude-opus-4-6' })),
    )
    const response = await callModel({
      models,
      request: { messages: history, maxTokens: 256 },
      limits: { admission: false },
      retry: { max529Retries: 0 },
    })
    expect(response.text).toBe('18 °C in Paris.')
    const toPrimary = busy.requests[0]?.body as Sent
    const toFallback = spare.requests[0]?.body as Sent
    expect(toFallback.messages[1]?.content[0]).toEqual({
      type: 'thinking',
      thinking: 'I should call the tool.',
      signature: 'sig-opus-1',
    })
    expect(toFallback.messages).toEqual(toPrimary.messages)
  })

  it('still strips them for a different model of the same provider', async () => {
    const busy = await fakes.start({ dialect: 'anthropic', reply: anthropicErrors.overloaded() })
    const other = await fakes.start({ dialect: 'anthropic', reply: reply.text('ok') })
    const models = [
      fakes.adapter(anthropic({ baseURL: busy.baseURL, apiKey: 'k', model: 'claude-opus-4-6' })),
      fakes.adapter(anthropic({ baseURL: other.baseURL, apiKey: 'k', model: 'claude-haiku-4-5' })),
    ]
    await callModel({
      models,
      request: { messages: history, maxTokens: 256 },
      limits: { admission: false },
      retry: { max529Retries: 0 },
    })
    expect(other.requests[0]?.rawBody).not.toContain('sig-opus-1')
  })
})
