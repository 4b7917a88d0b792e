import { type FakeProvider, reply } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

/**
 * A route weighs the prompt — messages, tools, a `response_format` schema —
 * against `maxSmallPromptTokens`. The request's other fields are no prompt:
 * `stream_options`, `seed`, `user`, `store`, `metadata`, a `prediction`
 * (billed as output). Counted, "hi" with OpenAI's `metadata` went to the
 * large model, and a prompt at the threshold went small unstreamed and large
 * streamed with `include_usage`.
 */
describe('a route weighs the prompt, not the other fields', () => {
  let fakes: FakeProvider[] = []
  let harness: Harness | undefined
  afterEach(async () => {
    await harness?.close()
    await Promise.all(fakes.map((f) => f.close()))
    fakes = []
    harness = undefined
  })

  async function routed(maxSmallPromptTokens?: number) {
    const small = await fakeProvider('openai', ['k-small'])
    const large = await fakeProvider('openai', ['k-large'])
    fakes.push(small.fake, large.fake)
    small.fake.setReply(reply.text('small'))
    large.fake.setReply(reply.text('large'))
    harness = await startHarness({
      providers: { s: small.entry, l: large.entry },
      models: {
        small: fallback(['s', 'gpt-4o-mini']),
        large: fallback(['l', 'gpt-4o']),
        auto: {
          route: {
            small: 'small',
            large: 'large',
            ...(maxSmallPromptTokens === undefined ? {} : { maxSmallPromptTokens }),
          },
        },
      },
    })
    return harness.client
  }

  it('a prompt at the threshold goes small whatever else the request sets', async () => {
    const client = await routed(10)
    // 24 ASCII characters (6 tokens) + 4 for the message: 10, not above 10.
    const messages = [{ role: 'user' as const, content: 'x'.repeat(24) }]
    const answer = async (params: Record<string, unknown>) => {
      if (params['stream'] === true) {
        let text = ''
        const stream = await client.chat.completions.create({
          model: 'auto',
          messages,
          stream: true,
          ...params,
        } as never)
        for await (const chunk of stream as unknown as AsyncIterable<{
          choices: Array<{ delta?: { content?: string | null } }>
        }>)
          text += chunk.choices[0]?.delta?.content ?? ''
        return text
      }
      const completion = await client.chat.completions.create({
        model: 'auto',
        messages,
        ...params,
      })
      return completion.choices[0]?.message.content
    }
    expect(await answer({})).toBe('small')
    expect(await answer({ stream: true, stream_options: { include_usage: true } })).toBe('small')
    expect(await answer({ seed: 1 })).toBe('small')
    expect(await answer({ user: 'u1' })).toBe('small')
    expect(await answer({ store: false })).toBe('small')
    // One more character is above it.
    const longer = await client.chat.completions.create({
      model: 'auto',
      messages: [{ role: 'user', content: 'x'.repeat(25) }],
    })
    expect(longer.choices[0]?.message.content).toBe('large')
  })

  it('"hi" with metadata or a prediction goes small; with a response_format schema (input) it may go large', async () => {
    const client = await routed() // maxSmallPromptTokens: 1000
    const messages = [{ role: 'user' as const, content: 'hi' }]
    const metadata = Object.fromEntries(
      Array.from({ length: 16 }, (_, i) => [`k${i}`, 'v'.repeat(512)]),
    )
    const withMetadata = await client.chat.completions.create({
      model: 'auto',
      messages,
      store: true,
      metadata,
    })
    expect(withMetadata.choices[0]?.message.content).toBe('small')
    const withPrediction = await client.chat.completions.create({
      model: 'auto',
      messages,
      prediction: { type: 'content', content: 'x'.repeat(5000) },
    })
    expect(withPrediction.choices[0]?.message.content).toBe('small')
    const withSchema = await client.chat.completions.create({
      model: 'auto',
      messages,
      response_format: {
        type: 'json_schema',
        json_schema: { name: 'x', schema: { type: 'object', description: 'd'.repeat(5000) } },
      },
    })
    expect(withSchema.choices[0]?.message.content).toBe('large')
    expect(harness!.logs.filter((l) => l['route'] !== undefined).map((l) => l['route'])).toEqual([
      'small:small',
      'small:small',
      'large:large',
    ])
  })
})
