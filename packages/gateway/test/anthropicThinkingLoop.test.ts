import type { FakeProvider } from '@hourglass/testkit'
import { reply } from '@hourglass/testkit'
import type OpenAI from 'openai'
import { afterEach, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'
import type { ReasoningMessage } from './support/reasoning.js'

/**
 * `reasoning_effort` to Claude in a tool loop, as the official `openai`
 * client runs one: the assistant's tool call goes back with its
 * `reasoning_content`, which carries no signature and goes to no provider.
 * With thinking on, Anthropic answers 400 to the loop's next request ("When
 * `thinking` is enabled, a final `assistant` message must start with a
 * thinking block"): every tool loop with `reasoning_effort` failed at its
 * second request. That request now goes without thinking; the next user
 * message thinks again.
 */

const tools: OpenAI.ChatCompletionTool[] = [
  { type: 'function', function: { name: 'weather', parameters: { type: 'object' } } },
]

describe('reasoning_effort to Claude, turn by turn', () => {
  let fake: FakeProvider | undefined
  let harness: Harness | undefined
  afterEach(async () => {
    await harness?.close()
    await fake?.close()
    harness = undefined
    fake = undefined
  })

  async function start(models: [string, ...string[]]) {
    const started = await fakeProvider('anthropic', ['sk-ant'])
    fake = started.fake
    harness = await startHarness({
      providers: { a: started.entry },
      models: { m: fallback(...models.map((model) => ['a', model] as [string, string])) },
    })
    return { fake: started.fake, client: harness.client }
  }

  for (const model of ['claude-sonnet-4-5', 'claude-opus-4-6']) {
    it(`${model}: a tool loop's second request is answered, unthought; the next question thinks`, async () => {
      const { fake, client } = await start([model])
      fake.enqueue(
        reply.text('', {
          thinking: 'I should call weather',
          signature: 'sig-1',
          toolCalls: [{ id: 'toolu_1', name: 'weather', arguments: { city: 'Paris' } }],
        }),
      )
      fake.enqueue(reply.text('It rains.', { thinking: 'unasked', signature: 'sig-2' }))
      fake.enqueue(reply.text('Sunny.', { thinking: 'Rome is warm', signature: 'sig-3' }))
      const messages: OpenAI.ChatCompletionMessageParam[] = [
        { role: 'user', content: 'Weather in Paris?' },
      ]
      const ask = () =>
        client.chat.completions.create({
          model: 'm',
          messages,
          tools,
          max_tokens: 8000,
          reasoning_effort: 'low',
        })
      const first = (await ask()).choices[0]!.message as ReasoningMessage
      expect(first.reasoning_content).toBe('I should call weather')
      messages.push(first as OpenAI.ChatCompletionMessageParam)
      messages.push({ role: 'tool', tool_call_id: first.tool_calls![0]!.id, content: '18C rain' })

      const second = (await ask()).choices[0]!.message as ReasoningMessage
      expect(second.content).toBe('It rains.')
      expect(second.reasoning_content).toBeUndefined()
      expect(fake.requests[1]!.body).not.toHaveProperty('thinking')

      messages.push(second as OpenAI.ChatCompletionMessageParam)
      messages.push({ role: 'user', content: 'And in Rome?' })
      const third = (await ask()).choices[0]!.message as ReasoningMessage
      expect(third.reasoning_content).toBe('Rome is warm')
      expect(fake.requests[2]!.body).toHaveProperty('thinking')
    })
  }

  it('a prefill beside reasoning_effort is a 400 naming messages, nothing sent', async () => {
    const { fake, client } = await start(['claude-sonnet-4-5'])
    const refused = await client.chat.completions
      .create({
        model: 'm',
        messages: [
          { role: 'user', content: 'JSON please' },
          { role: 'assistant', content: '{' },
        ],
        max_tokens: 8000,
        reasoning_effort: 'low',
      })
      .catch((error: unknown) => error)
    expect(refused).toMatchObject({ status: 400, param: 'messages' })
    expect((refused as Error).message).toContain('prefill')
    // "messages" is no field a client can remove.
    expect((refused as Error).message).not.toContain('remove the field')
    expect((refused as Error).message).toContain('; or route the model elsewhere')
    expect(fake.requests).toHaveLength(0)
  })

  it('without max_tokens, a budget above policy.defaultMaxTokens says to send one, not to remove a field', async () => {
    const { fake, client } = await start(['claude-sonnet-4-5'])
    const refused = await client.chat.completions
      .create({
        model: 'm',
        messages: [{ role: 'user', content: 'hi' }],
        reasoning_effort: 'medium',
      })
      .catch((error: unknown) => error)
    expect(refused).toMatchObject({ status: 400, param: 'max_tokens' })
    const message = (refused as Error).message
    expect(message).toContain('8192 tokens), got 4096')
    expect(message).toContain(
      "the request sent no max_tokens, so the gateway's policy.defaultMaxTokens was used",
    )
    expect(message).toContain('send a max_tokens above it')
    expect(message).not.toContain('remove the field')
    // A max_tokens the client sent is its own to raise.
    const sent = await client.chat.completions
      .create({
        model: 'm',
        messages: [{ role: 'user', content: 'hi' }],
        reasoning_effort: 'medium',
        max_tokens: 4096,
      })
      .catch((error: unknown) => error)
    expect((sent as Error).message).not.toContain('policy.defaultMaxTokens')
    expect((sent as Error).message).toContain('send a max_tokens above it')
    expect(fake.requests).toHaveLength(0)
    // Above the budget, it is sent.
    fake.setReply(reply.text('ok'))
    await client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
      reasoning_effort: 'medium',
      max_tokens: 8193,
    })
    expect(fake.requests[0]!.body).toMatchObject({
      thinking: { type: 'enabled', budget_tokens: 8192 },
    })
  })
})
