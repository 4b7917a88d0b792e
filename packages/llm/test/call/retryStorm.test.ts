import { Deadline } from '@hourglass/core'
import type { RecordedRequest } from '@hourglass/testkit'
import { reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import type { CallModelOptions } from '../../src/call/CallModelOptions.js'
import { callModel } from '../../src/call/callModel.js'
import { isModelUnavailable } from '../../src/errors/ModelUnavailableError.js'
import { RetryBudgetRegistry } from '../../src/retry/RetryBudgetRegistry.js'
import { drive, WaitClock } from '../support/waitClock.js'
import { useFakes, user } from './support/fakes.js'

const fakes = useFakes()
const CALLS = 100

/**
 * A 429 with no wait hint (so the client's own backoff and jitter decide) for
 * the first attempt of every call; later attempts are answered after 1 ms.
 * Every wait — the backoffs, the cooldown, the stagger, that 1 ms — runs on
 * `clock`, which moves only when every call is waiting on it (`drive`): the
 * times the fake records are the waits the calls asked for, not how late a
 * busy machine ran them.
 */
function firstAttemptLimited() {
  const seen = new Set<string>()
  return (request: RecordedRequest) => {
    const key = request.headers['idempotency-key'] ?? ''
    if (seen.has(key)) return reply.text('ok', { latencyMs: 1 })
    seen.add(key)
    return reply.error(429, {
      error: { message: 'Rate limit reached', type: 'requests', code: 'rate_limit_exceeded' },
    })
  }
}

/**
 * The per-call policy alone: no admission (each call waits out its own
 * limit), and a retry budget only where a test passes one.
 */
async function storm(options: { retryBudgets?: RetryBudgetRegistry | false }) {
  return stormOf({
    retry: {
      maxAttempts: 3,
      // 400 ms backoff + up to 30 % jitter: the spread we measure is the jitter's.
      delay: { baseDelayMs: 400 },
      budgets: options.retryBudgets ?? false,
    },
    limits: { admission: false },
  })
}

/** CALLS concurrent calls with `options`, each under a deadline on one manual clock (their waits' clock). */
async function stormOf(options: Pick<CallModelOptions, 'retry' | 'limits'>) {
  const clock = new WaitClock()
  const fake = await fakes.start({ dialect: 'openai', reply: firstAttemptLimited(), clock })
  const model = fakes.adapter(
    openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'gpt-4o-mini' }),
  )
  const deadlines = Array.from({ length: CALLS }, () => Deadline.after(60_000, { clock }))
  const results = await drive(
    clock,
    deadlines.map((deadline, i) =>
      callModel({
        ...options,
        models: [model],
        request: { messages: [user(`question ${i}`)], maxTokens: 16 },
        deadline,
      }),
    ),
  )
  for (const deadline of deadlines) deadline.dispose()
  return { fake, results }
}

describe('a 429 storm: 100 concurrent calls', () => {
  it('spread their retries out (jitter measured at the provider, not assumed)', async () => {
    const { fake, results } = await storm({})
    expect(results.every((r) => r.status === 'fulfilled')).toBe(true)
    // Pair each retry with its call's first attempt through the shared Idempotency-Key.
    const firstAt = new Map<string, number>()
    const gaps: number[] = []
    for (const r of fake.requests) {
      const key = r.headers['idempotency-key'] ?? ''
      const first = firstAt.get(key)
      if (first === undefined) firstAt.set(key, r.receivedAtMs)
      else gaps.push(r.receivedAtMs - first)
    }
    expect(gaps).toHaveLength(CALLS)
    const sorted = [...gaps].sort((a, b) => a - b)
    const mean = gaps.reduce((s, g) => s + g, 0) / gaps.length
    const sd = Math.sqrt(gaps.reduce((s, g) => s + (g - mean) ** 2, 0) / gaps.length)
    // The busiest 10 ms window of retry arrivals.
    const arrivals = fake.requests
      .filter((r) => r.reply === 'text')
      .map((r) => r.receivedAtMs)
      .sort((a, b) => a - b)
    let burst = 0
    for (let i = 0, j = 0; i < arrivals.length; i++) {
      while ((arrivals[i] as number) - (arrivals[j] as number) > 10) j++
      burst = Math.max(burst, i - j + 1)
    }
    console.info(
      `retry gaps after a 429: min ${sorted[0]?.toFixed(0)} ms, max ${sorted.at(-1)?.toFixed(0)} ms, ` +
        `sd ${sd.toFixed(1)} ms; busiest 10 ms window holds ${burst} of ${CALLS} retries`,
    )
    expect(sorted[0]).toBeGreaterThanOrEqual(400) // nobody came back before the backoff
    expect((sorted.at(-1) as number) - (sorted[0] as number)).toBeGreaterThan(50) // jitter up to 120 ms
    expect(sd).toBeGreaterThan(10) // uniform over 120 ms has sd ≈ 35 ms; no jitter has ≈ 0
    expect(burst).toBeLessThan(CALLS / 2)
  })

  it('with the retry budget on, send at most 1.3 upstream attempts per call', async () => {
    const retryBudgets = new RetryBudgetRegistry()
    const { fake, results } = await storm({ retryBudgets })
    const perCall = fake.requests.length / CALLS
    const answered = results.filter((r) => r.status === 'fulfilled').length
    const refused = results.filter((r) => r.status === 'rejected')
    console.info(
      `retry budget: ${fake.requests.length} upstream attempts for ${CALLS} calls (${perCall.toFixed(2)} per call), ${answered} answered`,
    )
    expect(perCall).toBeLessThanOrEqual(1.3)
    expect(answered).toBeGreaterThan(0) // retries still happen while the bucket is more than half full
    for (const r of refused) {
      expect(isModelUnavailable((r as PromiseRejectedResult).reason)).toBe(true)
      expect(String((r as PromiseRejectedResult).reason.message)).toMatch(/retry budget drained/)
    }
  })

  it('without the retry budget the same storm sends two attempts per call', async () => {
    const { fake } = await storm({})
    expect(fake.requests.length / CALLS).toBe(2)
  })
  it('with the defaults (shared admission and retry budget), every call is answered and no retry goes before the cooldown has ended and one probe has been answered', async () => {
    // No `limits` and no `retry.budgets`: the defaults (an admission on the deadlines' clock).
    const { fake, results } = await stormOf({ retry: { delay: { baseDelayMs: 400 } } })
    const answered = results.filter((r) => r.status === 'fulfilled').length
    console.info(
      `defaults: ${fake.requests.length} upstream attempts for ${CALLS} calls, ${answered} answered`,
    )
    // Every first attempt went out before the first 429 came back; each call then retried once.
    expect(answered).toBe(CALLS)
    expect(fake.requests).toHaveLength(2 * CALLS)
    const firstLimited = Math.min(
      ...fake.requests.filter((r) => r.reply !== 'text').map((r) => r.receivedAtMs),
    )
    const retries = fake.requests.filter((r) => r.reply === 'text').map((r) => r.receivedAtMs)
    const probe = Math.min(...retries)
    expect(probe - firstLimited).toBeGreaterThanOrEqual(400) // the cooldown (the caller's 400 ms backoff) was kept
    // Nobody went with the probe: the others followed its answer.
    expect(retries.filter((at) => at < probe + 1)).toHaveLength(1)
  })
})
