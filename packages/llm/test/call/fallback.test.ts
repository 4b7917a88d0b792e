import { anthropicErrors, reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { anthropic } from '../../src/adapters/anthropic.js'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { callModel } from '../../src/call/callModel.js'
import type { ChatMessage } from '../../src/types.js'
import { FAST_RETRIES, useFakes } from './support/fakes.js'

const fakes = useFakes()

const history: ChatMessage[] = [
  { role: 'user', content: 'What is 17 × 23?' },
  {
    role: 'assistant',
    content: [
      {
        type: 'thinking',
        thinking: '17 × 23 = 17 × 20 + 17 × 3 = 340 + 51 = 391',
        signature: 'sig-claude-opus-abc123',
      },
      { type: 'text', text: '391' },
    ],
  },
  { role: 'user', content: 'And divided by 17?' },
]

describe('fallback', () => {
  it('re-sends the same history to the fallback with thinking signatures stripped and thinking text kept', async () => {
    const claude = await fakes.start({ dialect: 'anthropic', reply: anthropicErrors.overloaded() })
    const deepseekFake = await fakes.start({ dialect: 'deepseek', reply: reply.text('23') })
    const primary = fakes.adapter(
      anthropic({ baseURL: claude.baseURL, apiKey: 'sk-ant', model: 'claude-opus-4-6' }),
    )
    const fallback = fakes.adapter(
      openAICompatible({
        baseURL: deepseekFake.baseURL,
        apiKey: 'sk-ds',
        model: 'deepseek-reasoner',
        dialect: 'deepseek',
        replayThinking: true,
      }),
    )
    const response = await callModel({
      models: [primary, fallback],
      request: { messages: history, maxTokens: 128 },
      retry: { max529Retries: 1, delay: FAST_RETRIES },
    })
    expect(response.text).toBe('23')

    // The primary got its own signature back, as Anthropic requires.
    const sentToPrimary = claude.requests[0]?.body as { messages: Array<{ content: unknown }> }
    expect(JSON.stringify(sentToPrimary.messages)).toContain('sig-claude-opus-abc123')
    // An overload with a ready fallback goes to the fallback at once.
    expect(claude.requests).toHaveLength(1)

    // The fallback got the same turns, the thinking text without the signature.
    expect(deepseekFake.requests).toHaveLength(1)
    const sent = deepseekFake.requests[0]?.body as { messages: Array<Record<string, unknown>> }
    expect(sent.messages.map((m) => m['role'])).toEqual(['user', 'assistant', 'user'])
    expect(sent.messages[1]).toMatchObject({
      content: '391',
      reasoning_content: '17 × 23 = 17 × 20 + 17 × 3 = 340 + 51 = 391',
    })
    expect(deepseekFake.requests[0]?.rawBody).not.toContain('sig-claude-opus-abc123')
    expect(deepseekFake.requests[0]?.headers['idempotency-key']).toBe(
      claude.requests[0]?.headers['idempotency-key'],
    )
  })

  it('leaves the caller’s history untouched', async () => {
    const failing = await fakes.start({ dialect: 'anthropic', reply: anthropicErrors.apiError() })
    const backupFake = await fakes.start({ dialect: 'anthropic', reply: reply.text('ok') })
    const primary = fakes.adapter(
      anthropic({ baseURL: failing.baseURL, apiKey: 'k', model: 'claude-opus-4-6', name: 'a' }),
    )
    const backup = fakes.adapter(
      anthropic({ baseURL: backupFake.baseURL, apiKey: 'k', model: 'claude-haiku-4-5', name: 'b' }),
    )
    const before = JSON.stringify(history)
    await callModel({
      models: [primary, backup],
      request: { messages: history, maxTokens: 64 },
      retry: { maxAttempts: 1 },
    })
    expect(JSON.stringify(history)).toBe(before)
    // Anthropic refuses unsigned thinking, so the other Claude model gets the turn without it.
    expect(backupFake.requests[0]?.rawBody).not.toContain('signature')
    expect(backupFake.requests[0]?.rawBody).toContain('And divided by 17?')
  })
})
