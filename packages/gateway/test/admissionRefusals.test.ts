import { type FakeProvider, openAIErrors, reply } from '@hourglass/testkit'
import { APIError } from 'openai'
import { afterEach, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

// What admission refuses, nothing sent: a provider whose every key is
// retired, or one cooling after an overload. The first must count as the
// fallback it is; the second must reach the client as the overload it is,
// not as a rate limit of the client's own.

/** 5 s: shorter than an overload's cooldown, so admission refuses at once instead of waiting. */
const within = { 'x-deadline-remaining-ms': '5000' }

/** OpenAI's overloaded 503, with the provider's wait: a 30 s provider-wide cooldown. */
const overloaded = () =>
  reply.error(
    503,
    {
      error: {
        message: 'The engine is currently overloaded, please try again later',
        type: 'server_error',
      },
    },
    { 'retry-after': '30' },
  )

/** `name{labels} value` lines of a Prometheus page, summed over the samples matching `labels`. */
function value(page: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0
  for (const line of page.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line)
    if (match?.[1] !== name) continue
    const found = Object.fromEntries(
      [...(match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]),
    )
    if (Object.entries(labels).every(([k, v]) => found[k] === v)) sum += Number(match[3])
  }
  return sum
}

describe('refusals by admission', () => {
  let fakes: FakeProvider[] = []
  let harness: Harness | undefined
  afterEach(async () => {
    await harness?.close()
    await Promise.all(fakes.map((f) => f.close()))
    fakes = []
    harness = undefined
  })

  async function post(headers: Record<string, string> = {}) {
    const res = await fetch(`${harness!.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
    })
    const body = (await res.json()) as { error?: { code: string; type: string } }
    return { status: res.status, error: body.error, retryAfter: res.headers.get('retry-after') }
  }

  it('a provider left because every key is retired counts a fallback, as any leaving does', async () => {
    const a = await fakeProvider('openai', ['sk-retired-a'])
    const b = await fakeProvider('openai', ['sk-healthy-b'])
    fakes.push(a.fake, b.fake)
    harness = await startHarness({
      providers: { a: a.entry, b: b.entry },
      models: { m: fallback(['a', 'model-a'], ['b', 'model-b']) },
    })
    a.fake.setReply(openAIErrors.authentication())
    // 1. a's only key is rejected (an attempt that falls back); b answers.
    // 2. a's key is retired: admission refuses it, nothing sent; b answers.
    for (let i = 0; i < 2; i++) {
      const answer = await harness.client.chat.completions.create({
        model: 'm',
        messages: [{ role: 'user', content: 'x' }],
      })
      expect(answer.choices[0]?.message.content).toBe('Hello from the fake provider.')
    }
    expect(a.fake.requests).toHaveLength(1)
    expect(b.fake.requests).toHaveLength(2)

    const page = await (await fetch(`${harness.url}/metrics`)).text()
    // Left twice: after its attempt, then by admission (every key retired).
    expect(value(page, 'hourglass_gateway_fallbacks_total', { provider: 'a' })).toBe(2)
    expect(value(page, 'hourglass_gateway_fallbacks_total')).toBe(2)
    expect(
      value(page, 'hourglass_gateway_upstream_attempts_total', {
        provider: 'a',
        outcome: 'fallback',
      }),
    ).toBe(1)
  })

  it('during an overload’s cooldown: 503 overloaded with Retry-After, as the overload itself was — not 429', async () => {
    const p = await fakeProvider('openai', ['sk-overloaded-p'])
    fakes.push(p.fake)
    harness = await startHarness({
      providers: { p: p.entry },
      models: { m: fallback(['p', 'model-p']) },
      policy: { maxAttempts: 1 },
    })
    p.fake.enqueue(overloaded())
    // The overload itself.
    const first = await post(within)
    expect(first).toMatchObject({
      status: 503,
      error: { code: 'overloaded', type: 'server_error' },
    })
    // Its cooldown: refused by admission, nothing sent.
    const second = await post(within)
    expect(second).toMatchObject({
      status: 503,
      error: { code: 'overloaded', type: 'server_error' },
    })
    // The cooldown's end, spread up to 2 s later (test/longRetryAfter.test.ts).
    expect(Number(second.retryAfter)).toBeGreaterThan(20)
    expect(Number(second.retryAfter)).toBeLessThanOrEqual(32)
    expect(p.fake.requests).toHaveLength(1)

    // The official client sees the same (a 503 it may retry, after Retry-After).
    const error = await harness.client.chat.completions
      .create(
        { model: 'm', messages: [{ role: 'user', content: 'x' }], stream: true },
        { headers: within },
      )
      .then(
        () => undefined,
        (e: unknown) => e,
      )
    expect(error).toBeInstanceOf(APIError)
    expect((error as APIError).status).toBe(503)
    expect((error as APIError).code).toBe('overloaded')
    expect(p.fake.requests).toHaveLength(1)
  })

  it('every provider of the list cooling after an overload: 503 overloaded with the soonest Retry-After', async () => {
    const a = await fakeProvider('openai', ['sk-overloaded-a'])
    const b = await fakeProvider('openai', ['sk-overloaded-b'])
    fakes.push(a.fake, b.fake)
    harness = await startHarness({
      providers: { a: a.entry, b: b.entry },
      models: { m: fallback(['a', 'model-a'], ['b', 'model-b']) },
      policy: { maxAttempts: 1 },
    })
    a.fake.enqueue(overloaded())
    b.fake.enqueue(overloaded())
    expect(await post(within)).toMatchObject({ status: 503, error: { code: 'overloaded' } })
    const refused = await post(within)
    expect(refused).toMatchObject({ status: 503, error: { code: 'overloaded' } })
    expect(Number(refused.retryAfter)).toBeGreaterThan(20)
    expect(a.fake.requests).toHaveLength(1)
    expect(b.fake.requests).toHaveLength(1)
  })

  it('a rate limit’s cooldown is still the client’s 429 rate_limit_exceeded', async () => {
    const p = await fakeProvider('openai', ['sk-limited-p'])
    fakes.push(p.fake)
    harness = await startHarness({
      providers: { p: p.entry },
      models: { m: fallback(['p', 'model-p']) },
      policy: { maxAttempts: 1 },
    })
    p.fake.enqueue(openAIErrors.rateLimited({ retryAfterS: 30 }))
    expect(await post(within)).toMatchObject({
      status: 429,
      error: { code: 'rate_limit_exceeded' },
    })
    const refused = await post(within)
    expect(refused).toMatchObject({ status: 429, error: { code: 'rate_limit_exceeded' } })
    expect(Number(refused.retryAfter)).toBeGreaterThan(20)
    expect(p.fake.requests).toHaveLength(1)
  })
})
