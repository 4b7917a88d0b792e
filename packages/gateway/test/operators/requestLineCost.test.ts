import { type FakeProvider, reply } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from '../support/harness.js'

/**
 * The `request` line is what operators sum for spend: under
 * `policy.maxCostUsdPerRequest` it carries what the request cost whatever
 * became of it — a client gone mid-stream, a stream cut, every provider
 * failing after billed attempts — and who was asked last, not only when an
 * attempt answered.
 */
describe('the request line carries the cost of every billed attempt, whatever the outcome', () => {
  let fakes: FakeProvider[] = []
  let harness: Harness | undefined
  afterEach(async () => {
    await harness?.close()
    await Promise.all(fakes.map((f) => f.close()))
    fakes = []
    harness = undefined
  })

  // A high price, so the cost of a few tokens is far from 0.
  const prices = (model: string) => ({ [model]: { inputPerMTok: 1000, outputPerMTok: 1000 } })

  async function start(
    models: Record<string, unknown>,
    policy: Record<string, unknown> = {},
    options: { logLevel?: 'debug' } = {},
  ) {
    const p = await fakeProvider('openai', ['sk-cost-key-0001'], { prices: prices('model-x') })
    const q = await fakeProvider('openai', ['sk-cost-key-0002'], { prices: prices('model-y') })
    fakes.push(p.fake, q.fake)
    harness = await startHarness(
      {
        providers: { p: p.entry, q: q.entry },
        models,
        policy: { maxCostUsdPerRequest: 5, ...policy },
      },
      options,
    )
    return { p: p.fake, q: q.fake }
  }

  const lines = (event: string) => harness!.logs.filter((l) => l.event === event)
  const ask = { model: 'm', messages: [{ role: 'user' as const, content: 'hi' }], max_tokens: 100 }

  it('a client that leaves after two streamed chunks: 499, with the cost of the tokens it was sent and who sent them', async () => {
    // The attempt a client left is not a failure: its line is at debug.
    const { p } = await start({ m: fallback(['p', 'model-x']) }, {}, { logLevel: 'debug' })
    const words = Array.from({ length: 40 }, (_, i) => ` w${i}`).join('')
    p.enqueue(reply.text(words, { tokenDelayMs: 20 }))
    const controller = new AbortController()
    const stream = await harness!.client.chat.completions.create(
      { ...ask, stream: true },
      { signal: controller.signal },
    )
    let chunks = 0
    // The SDK's iterator may end quietly or throw on the abort: either way the client has left.
    try {
      for await (const _ of stream) if (++chunks === 2) controller.abort()
    } catch {}
    await expect.poll(() => lines('request').length).toBe(1)
    const [attempt] = lines('attempt')
    expect(attempt).toMatchObject({ provider: 'p', decision: 'client_closed', level: 'debug' })
    expect(attempt?.['costUsd']).toBeGreaterThan(0)
    expect(lines('request')[0]).toMatchObject({
      status: 499,
      error: 'client_closed',
      provider: 'p',
      upstreamModel: 'model-x',
      attempts: 1,
      costUsd: attempt?.['costUsd'],
    })
  })

  it('a stream the provider cut after two tokens: 200 with stream_interrupted, and its cost', async () => {
    const { p } = await start({ m: fallback(['p', 'model-x']) })
    p.enqueue(reply.text('one two three four five six', { cutAfterTokens: 2 }))
    const stream = await harness!.client.chat.completions.create({ ...ask, stream: true })
    await expect(
      (async () => {
        for await (const _ of stream) {
        }
      })(),
    ).rejects.toThrow()
    await expect.poll(() => lines('request').length).toBe(1)
    const [attempt] = lines('attempt')
    expect(attempt?.['costUsd']).toBeGreaterThan(0)
    expect(lines('request')[0]).toMatchObject({
      status: 200,
      error: 'stream_interrupted',
      provider: 'p',
      upstreamModel: 'model-x',
      costUsd: attempt?.['costUsd'],
    })
  })

  it('every provider fails after a billed answer: 502, with the cost of both attempts summed and the last provider asked', async () => {
    const { p, q } = await start(
      { m: fallback(['p', 'model-x'], ['q', 'model-y']) },
      { maxAttempts: 1 },
    )
    // Whole answers generated (billed), then lost in transit.
    p.enqueue(reply.text('an answer that never arrives', { cutAfterTokens: 1 }))
    q.enqueue(reply.text('another answer that never arrives', { cutAfterTokens: 1 }))
    await expect(harness!.client.chat.completions.create(ask)).rejects.toMatchObject({
      status: 502,
    })
    await expect.poll(() => lines('request').length).toBe(1)
    const attempts = lines('attempt')
    expect(attempts.map((a) => a['provider'])).toEqual(['p', 'q'])
    const first = attempts[0]?.['costUsd'] as number
    const total = attempts[1]?.['costUsd'] as number
    // An attempt line carries the call's cost so far: the second, both attempts'.
    expect(first).toBeGreaterThan(0)
    expect(total).toBeGreaterThan(first)
    expect(lines('request')[0]).toMatchObject({
      status: 502,
      provider: 'q',
      upstreamModel: 'model-y',
      attempts: 2,
      costUsd: total,
    })
    expect(p.requests.length + q.requests.length).toBe(2)
  })

  it('without a cost budget the request line has no costUsd, answered or not', async () => {
    const p = await fakeProvider('openai', ['sk-cost-key-0003'])
    fakes.push(p.fake)
    harness = await startHarness({
      providers: { p: p.entry },
      models: { m: fallback(['p', 'model-x']) },
    })
    p.fake.enqueue(reply.text('answer', { cutAfterTokens: 1 }))
    await expect(harness.client.chat.completions.create(ask)).rejects.toMatchObject({
      status: 502,
    })
    await expect.poll(() => lines('request').length).toBe(1)
    expect(lines('request')[0]).toMatchObject({ provider: 'p', upstreamModel: 'model-x' })
    expect(lines('request')[0]).not.toHaveProperty('costUsd')
  })
})
