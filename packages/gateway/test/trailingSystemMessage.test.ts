import type { ProviderDialect } from '@hourglass/testkit'
import type OpenAI from 'openai'
import { describe, expect, it } from 'vitest'
import { dialectGateway } from './support/dialectGateway.js'

/**
 * Anthropic and Gemini have no system turn: a system or developer message
 * goes to `system` / `systemInstruction` wherever it stood. One that comes
 * after the assistant's last turn (a summary or reminder instruction
 * appended to a history) left that turn last: Claude up to 4.5 and Gemini
 * read it as a prefill and continue the assistant's words instead of
 * following the instruction, and Claude 4.6 and later were refused "a last
 * message of the assistant" the client never sent. Refused naming the
 * message, nothing sent, as an empty last user message is.
 */
const gateway = dialectGateway(['openai', 'anthropic', 'gemini'])

const messages: OpenAI.ChatCompletionMessageParam[] = [
  { role: 'user', content: 'Tell me about Paris.' },
  { role: 'assistant', content: 'Paris is the capital of France.' },
  { role: 'developer', content: 'Summarize the conversation above in one line.' },
]

describe('a system message after the assistant’s last turn', () => {
  it('still reaches OpenAI in its place', async () => {
    const fake = gateway.fake('openai')
    await gateway.client.chat.completions.create({ model: 'm-openai', messages })
    const sent = fake.requests.at(-1)?.body as { messages: Array<{ role: string }> }
    expect(sent.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'system'])
  })

  for (const [dialect, name] of [
    ['anthropic', 'Anthropic'],
    ['gemini', 'Gemini'],
  ] as Array<[ProviderDialect, string]>) {
    it(`is refused for ${name}, naming it, nothing sent (no prefill)`, async () => {
      const fake = gateway.fake(dialect)
      const before = fake.requests.length
      const error = await gateway.client.chat.completions
        .create({ model: `m-${dialect}`, messages })
        .catch((e: unknown) => e)
      expect(error).toMatchObject({
        status: 400,
        code: 'unsupported_field',
        param: 'messages[2].role',
      })
      expect((error as Error).message).toContain(`${name} has no system turn`)
      expect(fake.requests.length).toBe(before)
    })

    it(`goes to ${name} when a user message follows it, or when it is blank`, async () => {
      const fake = gateway.fake(dialect)
      const before = fake.requests.length
      await gateway.client.chat.completions.create({
        model: `m-${dialect}`,
        messages: [...messages, { role: 'user', content: 'go on' }],
      })
      await gateway.client.chat.completions.create({
        model: `m-${dialect}`,
        messages: [...messages.slice(0, 2), { role: 'system', content: '' }],
      })
      expect(fake.requests.length).toBe(before + 2)
    })
  }
})
