import { type FakeProvider, openAIErrors, reply } from '@hourglass/testkit'
import OpenAI from 'openai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

/**
 * A stream's wait for its first token ends at the SDK's own timeout
 * (`X-Stainless-Timeout`), so a wait before sending (an RPM window, a
 * cooldown) that does not fit that timeout is refused at once: 429 with
 * `Retry-After`, as the same request unstreamed gets. Weighed against the
 * ingress deadline (60 s by default) instead, the stream waited out a 30 s
 * cooldown or a 60 s window: its client timed out after its 2 s with nothing
 * (APIConnectionTimeoutError, retried by the SDK into the same wait), never
 * told when to come back.
 */
describe('a stream whose wait before sending does not fit the client timeout', () => {
  let limited: FakeProvider
  let cooling: FakeProvider
  let h: Harness
  beforeAll(async () => {
    const p = await fakeProvider('openai', ['sk-stream-wait-limited'], { limits: { rpm: 1 } })
    const q = await fakeProvider('openai', ['sk-stream-wait-cooling'])
    limited = p.fake
    cooling = q.fake
    limited.setReply(reply.text('ok'))
    cooling.setReply(reply.text('ok'))
    h = await startHarness({
      providers: { p: p.entry, q: q.entry },
      models: { limited: fallback(['p', 'model-p']), cooling: fallback(['q', 'model-q']) },
      policy: { maxAttempts: 1 },
      // A window that always fits the ingress deadline (60 s): only the client's timeout can refuse its wait.
      limits: { windowMs: 10_000 },
    })
  })
  afterAll(async () => {
    await h?.close()
    await limited?.close()
    await cooling?.close()
  })

  /** The error a streamed request with the SDK's `timeout: 2000` ends with (none: it streamed). */
  async function streamed(model: string): Promise<unknown> {
    try {
      const stream = await h.client.chat.completions.create(
        { model, stream: true, messages: [{ role: 'user', content: 'x' }] },
        { timeout: 2000 },
      )
      for await (const _ of stream) {
        // read to the end
      }
      return undefined
    } catch (error) {
      return error
    }
  }

  it('the RPM window: refused at once with Retry-After, nothing sent', async () => {
    await h.client.chat.completions.create({
      model: 'limited',
      messages: [{ role: 'user', content: 'x' }],
    })
    const error = await streamed('limited')
    expect(error).toBeInstanceOf(OpenAI.RateLimitError)
    const seconds = Number(
      (error as InstanceType<typeof OpenAI.APIError>).headers?.get('retry-after'),
    )
    expect(seconds).toBeGreaterThan(2)
    expect(limited.requests).toHaveLength(1)
  })

  it('a cooldown: refused at once with Retry-After, nothing sent', async () => {
    cooling.enqueue(openAIErrors.rateLimited({ retryAfterS: 30 }))
    const first = await h.client.chat.completions
      .create({ model: 'cooling', messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e)
    expect(first).toBeInstanceOf(OpenAI.RateLimitError)
    const error = await streamed('cooling')
    expect(error).toBeInstanceOf(OpenAI.RateLimitError)
    const seconds = Number(
      (error as InstanceType<typeof OpenAI.APIError>).headers?.get('retry-after'),
    )
    expect(seconds).toBeGreaterThan(2)
    expect(cooling.requests).toHaveLength(1)
    // Logged as the refusal it is, not a client that left.
    const streams = h.logs.filter((l) => l.event === 'request' && l.stream === true)
    expect(streams.map((l) => [l.status, l.error])).toEqual([
      [429, 'rate_limit_exceeded'],
      [429, 'rate_limit_exceeded'],
    ])
  })
})
