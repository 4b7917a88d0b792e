import type { FakeProvider, ProviderDialect } from '@hourglass/testkit'
import { reply } from '@hourglass/testkit'
import type OpenAI from 'openai'
import { afterEach, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

type Params = OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming

/**
 * OpenAI's content parts (`[{type: 'text', text: 'a'}, {type: 'text', text:
 * 'b'}]`) are separate pieces of one message. Anthropic takes a message's
 * content as text blocks and Gemini as parts: each part goes as its own,
 * not glued to the next (`"ab"`: two words, or a reminder and a question,
 * run together). A tool result is one string for every dialect llm builds:
 * its parts go a line apart, as vLLM flattens text parts.
 */
describe('text content parts', () => {
  let fakes: FakeProvider[] = []
  let harness: Harness | undefined
  afterEach(async () => {
    await harness?.close()
    await Promise.all(fakes.map((f) => f.close()))
    fakes = []
    harness = undefined
  })

  async function sent(dialect: ProviderDialect, params: Omit<Params, 'model'>) {
    const { fake, entry } = await fakeProvider(dialect, ['key'])
    fakes.push(fake)
    fake.setReply(reply.text('ok'))
    harness = await startHarness({ providers: { p: entry }, models: { m: fallback(['p', 'x']) } })
    const answer = await harness.client.chat.completions.create({ model: 'm', ...params })
    expect(answer.choices[0]?.message.content).toBe('ok')
    return fake.requests.at(-1)?.body as Record<string, unknown>
  }

  const parts = (...texts: string[]) => texts.map((text) => ({ type: 'text' as const, text }))

  it('of a user message reach Anthropic as text blocks of their own', async () => {
    const body = await sent('anthropic', {
      messages: [{ role: 'user', content: parts('<reminder>', 'What is 2+2?') }],
    })
    expect(body['messages']).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: '<reminder>' },
          { type: 'text', text: 'What is 2+2?' },
        ],
      },
    ])
  })

  it('of a user and an assistant message reach Gemini as parts of their own', async () => {
    const body = await sent('gemini', {
      messages: [
        { role: 'user', content: parts('a', 'b') },
        { role: 'assistant', content: parts('c', 'd') },
        { role: 'user', content: 'e' },
      ],
    })
    expect(body['contents']).toEqual([
      { role: 'user', parts: [{ text: 'a' }, { text: 'b' }] },
      { role: 'model', parts: [{ text: 'c' }, { text: 'd' }] },
      { role: 'user', parts: [{ text: 'e' }] },
    ])
  })

  it('of a system message are not glued for Anthropic', async () => {
    const body = await sent('anthropic', {
      messages: [
        { role: 'system', content: parts('Be brief.', 'Answer in French.') },
        { role: 'user', content: 'hi' },
      ],
    })
    expect(body['system']).not.toContain('brief.Answer')
    expect(body['system']).toMatch(/^Be brief\.\s+Answer in French\.$/)
  })

  it('of a tool result go a line apart (a string for every dialect)', async () => {
    const messages: Params['messages'] = [
      { role: 'user', content: 'weather?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c1', type: 'function', function: { name: 'w', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: 'c1', content: parts('sunny', '21 °C') },
    ]
    const tools: Params['tools'] = [
      { type: 'function', function: { name: 'w', parameters: { type: 'object' } } },
    ]
    const anthropic = await sent('anthropic', { messages, tools })
    const turns = anthropic['messages'] as Array<{ content: Array<Record<string, unknown>> }>
    expect(turns.at(-1)?.content[0]).toMatchObject({ type: 'tool_result', content: 'sunny\n21 °C' })
    await harness?.close()
    harness = undefined
    const openai = await sent('openai', { messages, tools })
    expect((openai['messages'] as Array<Record<string, unknown>>).at(-1)).toMatchObject({
      role: 'tool',
      content: 'sunny\n21 °C',
    })
  })
})
