import { afterEach, describe, expect, it } from 'vitest'
import { type FakeProvider, reply, startFakeProvider } from '../../src/providers/index.js'
import { postAnthropicMessages } from '../support/fakeChat.js'
import { readSse } from './sse.js'

/**
 * Claude thinks only when the request turns thinking on — `thinking: {type:
 * "enabled", budget_tokens}`, or `{type: "adaptive"}` on the models that
 * take it (docs.claude.com, "Extended thinking"). Without it no `thinking`
 * block comes, no `thinking_delta` or `signature_delta` event, and no
 * thinking is billed. The fake sent a scripted `thinking` to every request,
 * so a client that never asked (llm refused `reasoning_effort` for
 * Anthropic) passed tests that said its thinking worked.
 */
let fake: FakeProvider | undefined
afterEach(async () => {
  await fake?.close()
  fake = undefined
})

const messages = (base: string, body: Record<string, unknown> = {}) =>
  postAnthropicMessages(base, body, { model: 'claude-sonnet-4-5', maxTokens: 2048 })

const thoughtful = reply.text('The answer is 4.', {
  thinking: 'Two plus two is four.',
  signature: 'EqQBCkYIBxgCKkBfake',
  usage: { inputTokens: 12 },
})

interface Message {
  content: unknown[]
  usage: { output_tokens: number }
}

interface Event {
  type: string
  content_block?: { type: string }
  delta?: { type: string }
  usage?: { output_tokens: number }
}

describe('fake Anthropic: thinking only when the request turns it on', () => {
  const notAsked: [string, Record<string, unknown>][] = [
    ['no thinking field', {}],
    ['thinking disabled', { thinking: { type: 'disabled' } }],
  ]
  for (const [name, body] of notAsked) {
    it(`${name}, whole: no thinking block, and the thinking is not billed`, async () => {
      fake = await startFakeProvider({ dialect: 'anthropic', reply: thoughtful })
      const json = (await (await messages(fake.baseURL, body)).json()) as Message
      expect(json.content).toEqual([{ type: 'text', text: 'The answer is 4.' }])
      // "The answer is 4." is 5 tokens; the thinking's 6 are not generated.
      expect(json.usage.output_tokens).toBe(5)
      expect(fake.requests[0]?.tokensSent).toBe(5)
    })

    it(`${name}, streamed: no thinking block, no thinking_delta or signature_delta`, async () => {
      fake = await startFakeProvider({ dialect: 'anthropic', reply: thoughtful })
      const stream = await readSse(await messages(fake.baseURL, { ...body, stream: true }))
      const data = stream.events.map((e) => JSON.parse(e.data) as Event)
      const starts = data.filter((d) => d.type === 'content_block_start')
      expect(starts.map((d) => d.content_block?.type)).toEqual(['text'])
      const deltas = data.filter((d) => d.type === 'content_block_delta')
      expect(deltas.every((d) => d.delta?.type === 'text_delta')).toBe(true)
      expect(data.find((d) => d.type === 'message_delta')?.usage?.output_tokens).toBe(5)
      expect(fake.requests[0]?.tokensSent).toBe(5)
    })
  }

  const asked: [string, Record<string, unknown>][] = [
    ['enabled with a budget', { thinking: { type: 'enabled', budget_tokens: 1024 } }],
    ['adaptive', { model: 'claude-opus-4-6', thinking: { type: 'adaptive' } }],
  ]
  for (const [name, body] of asked) {
    it(`${name}: the thinking block with its signature, billed`, async () => {
      fake = await startFakeProvider({ dialect: 'anthropic', reply: thoughtful })
      const json = (await (await messages(fake.baseURL, body)).json()) as Message
      expect(json.content).toEqual([
        { type: 'thinking', thinking: 'Two plus two is four.', signature: 'EqQBCkYIBxgCKkBfake' },
        { type: 'text', text: 'The answer is 4.' },
      ])
      expect(json.usage.output_tokens).toBe(11)
      const stream = await readSse(await messages(fake.baseURL, { ...body, stream: true }))
      const types = stream.events
        .map((e) => JSON.parse(e.data) as Event)
        .filter((d) => d.type === 'content_block_delta')
        .map((d) => d.delta?.type)
      expect(new Set(types)).toEqual(new Set(['thinking_delta', 'signature_delta', 'text_delta']))
    })
  }
})
