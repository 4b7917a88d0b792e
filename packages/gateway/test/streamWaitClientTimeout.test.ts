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

/** What the client of a streamed request saw: its status and `Retry-After`, or the error's class. */
async function streamedOutcome(
  client: OpenAI,
  model: string,
  timeout: number,
): Promise<{ status: number | string; retryAfter?: string | null | undefined }> {
  try {
    const stream = await client.chat.completions.create(
      { model, stream: true, messages: [{ role: 'user', content: 'x' }] },
      { timeout },
    )
    for await (const _ of stream) {
      // read to the end
    }
    return { status: 200 }
  } catch (error) {
    if (!(error instanceof OpenAI.APIError) || error.status === undefined) {
      return { status: (error as Error).constructor.name }
    }
    return { status: error.status, retryAfter: error.headers?.get('retry-after') }
  }
}

/**
 * The client's timeout is weighed again on every pass of a wait, with the
 * time the request still needs: it is a point in time, not a length fixed
 * when the request came. Capped once at the time then left, two waits that
 * each fitted were both taken (a window, found full again when it reset):
 * the client got a 504 at its timeout with no `Retry-After`, where the same
 * request unstreamed got 429 at the reset. And a wait that fitted alone,
 * not with the provider's time to first token, was waited out, the request
 * sent (and billed) and cut 504 before its first token.
 */
describe('a stream whose waits before sending add up past the client timeout', () => {
  let fake: FakeProvider
  let h: Harness
  beforeAll(async () => {
    const p = await fakeProvider('openai', ['sk-stream-wait-twice'], { limits: { rpm: 1 } })
    fake = p.fake
    fake.setReply(reply.text('ok'))
    h = await startHarness({
      providers: { p: p.entry },
      models: { m: fallback(['p', 'model-p']) },
      policy: { maxAttempts: 1 },
      limits: { windowMs: 2000 },
    })
  })
  afterAll(async () => {
    await h?.close()
    await fake?.close()
  })

  it('the second window wait is refused when the window resets, 429 with Retry-After, not cut at the timeout', async () => {
    // Takes the window's one request.
    await h.client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'x' }],
    })
    // `timeout: 2999` (sent as 2, read as 2999 ms): one 2 s wait fits, two
    // do not. Both wait for the reset; one takes the new window.
    const outcomes = await Promise.all([
      streamedOutcome(h.client, 'm', 2999),
      streamedOutcome(h.client, 'm', 2999),
    ])
    const [answered, refused] = outcomes.sort((a, b) =>
      String(a.status).localeCompare(String(b.status)),
    )
    expect(answered).toEqual({ status: 200 })
    expect(refused?.status).toBe(429)
    expect(Number(refused?.retryAfter)).toBeGreaterThanOrEqual(1)
    expect(fake.requests).toHaveLength(2)
    const streams = h.logs.filter((l) => l.event === 'request' && l.stream === true)
    expect(streams.map((l) => [l.status, l.error]).sort()).toEqual([
      [200, undefined],
      [429, 'rate_limit_exceeded'],
    ])
  })
})

describe("a stream whose wait fits the client timeout but not with the provider's time to first token", () => {
  let fake: FakeProvider
  let h: Harness
  beforeAll(async () => {
    const p = await fakeProvider('openai', ['sk-stream-wait-needed'], { limits: { rpm: 1 } })
    fake = p.fake
    // 1.3 s to answer: the latency admission expects of the provider once measured.
    fake.setReply(reply.text('ok', { firstTokenDelayMs: 1300 }))
    h = await startHarness({
      providers: { p: p.entry },
      models: { m: fallback(['p', 'model-p']) },
      policy: { maxAttempts: 1 },
      limits: { windowMs: 3000 },
    })
  })
  afterAll(async () => {
    await h?.close()
    await fake?.close()
  })

  it('is refused at once, 429 with Retry-After, nothing sent', async () => {
    // Takes the window's one request, and measures the provider's 1.3 s.
    await h.client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'x' }],
    })
    // `timeout: 1999` (sent as 1, read as 1999 ms): the window resets in
    // ~1.7 s, and the answer's first token would come ~1.3 s after that.
    const outcome = await streamedOutcome(h.client, 'm', 1999)
    expect(outcome.status).toBe(429)
    expect(Number(outcome.retryAfter)).toBeGreaterThanOrEqual(1)
    expect(fake.requests).toHaveLength(1)
  })
})
