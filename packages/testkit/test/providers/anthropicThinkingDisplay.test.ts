import { describe, expect, it } from 'vitest'
import { reply } from '../../src/providers/index.js'
import { postAnthropicMessages, useFakeProvider } from '../support/fakeChat.js'
import { readSse } from './sse.js'

/**
 * Opus 4.7 and later and the Claude 5 models send their thinking blocks
 * with an empty `thinking` field (the signature still there) unless the
 * request sets `thinking.display: "summarized"`; the Claude 5 models think
 * without a `thinking` field at all. The fake sent every model's thinking
 * text, and no thinking to a Claude 5 request that did not ask.
 */
const start = useFakeProvider()

const thoughtful = reply.text('The answer is 4.', {
  thinking: 'Two plus two is four.',
  signature: 'EqQBCkYIBxgCKkBfake',
  usage: { inputTokens: 12 },
})

const ask = (base: string, model: string, body: Record<string, unknown> = {}) =>
  postAnthropicMessages(base, body, { model, maxTokens: 2048 })

interface Message {
  content: unknown[]
  usage: { output_tokens: number }
}

const adaptive = { thinking: { type: 'adaptive' } }

describe('fake Anthropic: thinking text omitted by default on Opus 4.7 and the Claude 5 models', () => {
  it.each([
    ['claude-opus-4-7', adaptive],
    ['claude-opus-4-8', adaptive],
    ['claude-sonnet-5', {}],
    ['claude-fable-5', adaptive],
  ])(
    '%s %j, whole: the block holds the signature, not the text, which is still billed',
    async (model, body) => {
      const fake = await start({ dialect: 'anthropic', reply: thoughtful })
      const json = (await (await ask(fake.baseURL, model, body)).json()) as Message
      expect(json.content).toEqual([
        { type: 'thinking', thinking: '', signature: 'EqQBCkYIBxgCKkBfake' },
        { type: 'text', text: 'The answer is 4.' },
      ])
      // The thinking's 6 tokens and the answer's 5.
      expect(json.usage.output_tokens).toBe(11)
      expect(fake.requests[0]?.tokensSent).toBe(11)
    },
  )

  it('streamed: the block opens empty and gets its signature, with no thinking_delta', async () => {
    const fake = await start({ dialect: 'anthropic', reply: thoughtful })
    const stream = await readSse(
      await ask(fake.baseURL, 'claude-opus-4-7', { ...adaptive, stream: true }),
    )
    const deltas = stream.events
      .map((e) => JSON.parse(e.data) as { type: string; delta?: { type: string } })
      .filter((e) => e.type === 'content_block_delta')
      .map((e) => e.delta?.type)
    expect(deltas).not.toContain('thinking_delta')
    expect(deltas[0]).toBe('signature_delta')
    expect(fake.requests[0]?.tokensSent).toBe(11)
  })

  it('display "summarized" sends the text; "omitted" hides it on an earlier model too', async () => {
    const fake = await start({ dialect: 'anthropic', reply: thoughtful })
    const shown = (await (
      await ask(fake.baseURL, 'claude-opus-4-7', {
        thinking: { type: 'adaptive', display: 'summarized' },
      })
    ).json()) as Message
    expect(shown.content[0]).toMatchObject({ thinking: 'Two plus two is four.' })
    const hidden = (await (
      await ask(fake.baseURL, 'claude-sonnet-4-5', {
        thinking: { type: 'enabled', budget_tokens: 1024, display: 'omitted' },
      })
    ).json()) as Message
    expect(hidden.content[0]).toMatchObject({ thinking: '' })
  })

  it('earlier models send the text, and Opus 4.7 does not think without a thinking field', async () => {
    const fake = await start({ dialect: 'anthropic', reply: thoughtful })
    const earlier = (await (await ask(fake.baseURL, 'claude-opus-4-6', adaptive)).json()) as Message
    expect(earlier.content[0]).toMatchObject({ thinking: 'Two plus two is four.' })
    const unasked = (await (await ask(fake.baseURL, 'claude-opus-4-7')).json()) as Message
    expect(unasked.content).toEqual([{ type: 'text', text: 'The answer is 4.' }])
  })
})
