import type { FakeProvider, ProviderDialect } from '@hourglass/testkit'
import { reply } from '@hourglass/testkit'
import type OpenAI from 'openai'
import { afterEach, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

// One per request builder in @hourglass/llm (Qwen, ERNIE and Doubao share
// OpenAI's), and DeepSeek, whose field it is.
const DIALECTS: ProviderDialect[] = ['openai', 'deepseek', 'anthropic', 'gemini']

/**
 * The usual chat loop: the answer's message is pushed back into `messages`
 * as the client got it. A reasoning answer carries `reasoning_content`; the
 * gateway must take it back, and send it to no provider on a plain turn —
 * but to DeepSeek in a tool loop, whose thinking mode answers 400 to such a
 * turn without it.
 */
describe('an assistant message sent back with its reasoning_content', () => {
  let fakes: FakeProvider[] = []
  let harness: Harness | undefined
  afterEach(async () => {
    await harness?.close()
    await Promise.all(fakes.map((f) => f.close()))
    fakes = []
    harness = undefined
  })

  it('is accepted, and its reasoning is sent to no provider, whatever its dialect', async () => {
    const providers: Record<string, unknown> = {}
    const models: Record<string, unknown> = {}
    const byDialect = new Map<ProviderDialect, FakeProvider>()
    for (const dialect of DIALECTS) {
      const { fake, entry } = await fakeProvider(dialect, [`key-${dialect}`])
      fakes.push(fake)
      byDialect.set(dialect, fake)
      providers[dialect] = entry
      models[`m-${dialect}`] = fallback([dialect, `${dialect}-model`])
    }
    harness = await startHarness({ providers, models })
    for (const [dialect, fake] of byDialect) {
      fake.enqueue(
        reply.text('the answer', { thinking: 'secret chain of thought', signature: 'sig-1' }),
        reply.text('second answer'),
      )
      const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'hi' }]
      const first = await harness.client.chat.completions.create({
        model: `m-${dialect}`,
        messages,
        // Gemini and Anthropic send their thinking only when asked for it.
        ...(dialect === 'gemini' || dialect === 'anthropic'
          ? { reasoning_effort: 'low' as const }
          : {}),
      })
      const answer = first.choices[0]!.message as OpenAI.ChatCompletionMessage & {
        reasoning_content?: unknown
      }
      if (dialect === 'openai') {
        // OpenAI's own API sends no reasoning text (only its token count):
        // the message gets one by hand, as a client that switched from a
        // model that sends it would send it back.
        expect(answer.reasoning_content, dialect).toBeUndefined()
        answer.reasoning_content = 'secret chain of thought'
      } else {
        expect(answer.reasoning_content, dialect).toBe('secret chain of thought')
      }
      messages.push(answer, { role: 'user', content: 'and then?' })
      const second = await harness.client.chat.completions.create({
        model: `m-${dialect}`,
        messages,
      })
      expect(second.choices[0]?.message.content, dialect).toBe('second answer')
      const sent = JSON.stringify(fake.requests.at(-1)?.body)
      expect(sent, dialect).toContain('the answer')
      expect(sent, dialect).not.toContain('secret chain of thought')
      expect(sent, dialect).not.toContain('reasoning_content')
    }
  })

  it('goes back to DeepSeek on a tool loop\'s turns as the client sent it, not as ""', async () => {
    const { fake, entry } = await fakeProvider('deepseek', ['key-deepseek'])
    fakes.push(fake)
    harness = await startHarness({
      providers: { d: entry },
      models: { m: fallback(['d', 'deepseek-reasoner']) },
    })
    fake.enqueue(reply.text('4 °C'))
    const answer = await harness.client.chat.completions.create({
      model: 'm',
      messages: [
        { role: 'user', content: 'Weather in Oslo?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{}' } },
          ],
          reasoning_content: 'I need the weather tool for Oslo',
        } as OpenAI.ChatCompletionAssistantMessageParam,
        { role: 'tool', tool_call_id: 'call_1', content: '4 °C' },
      ],
      tools: [{ type: 'function', function: { name: 'weather', parameters: { type: 'object' } } }],
    })
    expect(answer.choices[0]?.message.content).toBe('4 °C')
    const sent = fake.requests.at(-1)?.body as { messages: Array<Record<string, unknown>> }
    // Before: dropped by the gateway, then sent as "" (llm's default for a
    // turn without thinking), the model's own reasoning replaced by nothing.
    expect(sent.messages[1]?.['reasoning_content']).toBe('I need the weather tool for Oslo')
  })

  it('null is accepted too; anything else is a 400 naming it, with nothing sent', async () => {
    const { fake, entry } = await fakeProvider('deepseek', ['key-deepseek'])
    fakes.push(fake)
    harness = await startHarness({
      providers: { d: entry },
      models: { m: fallback(['d', 'deepseek-chat']) },
    })
    const post = (reasoning: unknown) =>
      fetch(`${harness!.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'm',
          messages: [
            { role: 'user', content: 'hi' },
            { role: 'assistant', content: 'hello', reasoning_content: reasoning },
            { role: 'user', content: 'more' },
          ],
        }),
      })
    fake.enqueue(reply.text('ok'))
    const accepted = await post(null)
    expect(accepted.status).toBe(200)
    const sent = fake.requests.at(-1)?.body as { messages: unknown[] }
    expect(sent.messages[1]).toEqual({ role: 'assistant', content: 'hello' })

    const refused = await post(42)
    expect(refused.status).toBe(400)
    expect(((await refused.json()) as { error: unknown }).error).toMatchObject({
      code: 'invalid_request',
      param: 'messages[1].reasoning_content',
    })
    expect(fake.requests).toHaveLength(1)
  })
})
