import { type Clock, Deadline, ManualClock, systemClock } from '@hourglass/core'
import { openAIErrors, reply } from '@hourglass/testkit'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { Admission } from '../../src/admission/Admission.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import { isModelUnavailable } from '../../src/errors/ModelUnavailableError.js'
import { isProviderError } from '../../src/errors/ProviderError.js'
import type { ChatResponse } from '../../src/types.js'
import { useFakes, user } from './support/fakes.js'

const fakes = useFakes()
const request = { messages: [user('hello')], maxTokens: 16 }
const DAY_S = 86_400

afterEach(() => {
  vi.restoreAllMocks()
})

/**
 * Records every timer armed on `clock` (with `waitsOnly`, only the waits: the
 * timers that keep the process alive, as core's `wait` arms them on the
 * system clock — not the HTTP client's phase timers). One longer than
 * `limitMs` is not armed: `tooLong` resolves with it instead, so a test can
 * race the call against it and fail at once (no 24 h wait, no sleep) when
 * the call starts waiting that long.
 */
function watchTimers(clock: Pick<Clock, 'setTimeout'>, limitMs = 60_000, waitsOnly = false) {
  const armed: number[] = []
  let report!: (ms: number) => void
  const tooLong = new Promise<number>((resolve) => {
    report = resolve
  })
  const arm: Clock['setTimeout'] = clock.setTimeout.bind(clock)
  const setTimeout: Clock['setTimeout'] = (callback, ms, options) => {
    if (waitsOnly && options?.keepAlive !== true) return arm(callback, ms, options)
    armed.push(ms)
    if (ms <= limitMs) return arm(callback, ms, options)
    report(ms)
    return undefined
  }
  return { armed, tooLong, setTimeout }
}

type Settled = { answer: ChatResponse } | { error: unknown } | { timerArmedMs: number }

/** How the call settled — or the first timer past the limit it armed instead. */
function settle(call: Promise<ChatResponse>, tooLong: Promise<number>): Promise<Settled> {
  return Promise.race([
    call.then(
      (answer) => ({ answer }),
      (error: unknown) => ({ error }),
    ),
    tooLong.then((timerArmedMs) => ({ timerArmedMs })),
  ])
}

async function openAIModel(name: string, apiKey = 'sk-a') {
  const fake = await fakes.start({ dialect: 'openai', reply: reply.text(`answered by ${name}`) })
  const adapter = fakes.adapter(openAICompatible({ baseURL: fake.baseURL, apiKey, model: name }))
  return { fake, adapter }
}

/** A manual clock whose timers are watched, and an Admission on it (a call without a deadline uses it). */
function manualAdmission(limitMs = 60_000, options: { maxRetryAfterMs?: number } = {}) {
  const clock = new ManualClock()
  const timers = watchTimers(clock, limitMs)
  clock.setTimeout = timers.setTimeout
  const admission = new Admission({ clock, defaultNeededMs: 0, staggerMs: 0, ...options })
  return { clock, timers, admission }
}

describe('a Retry-After beyond retry.maxRetryAfterMs (default 60 s) is not slept', () => {
  it('no deadline, one model: a 429 `Retry-After: 86400` settles at once with the provider’s rate limit, naming the wait (no timer past 60 s)', async () => {
    const { timers, admission } = manualAdmission()
    const { fake, adapter } = await openAIModel('gpt-4o-mini')
    fake.enqueue(openAIErrors.rateLimited({ retryAfterS: DAY_S }))
    const records: AttemptRecord[] = []
    const settled = await settle(
      callModel({
        models: [adapter],
        request,
        limits: { admission },
        onAttempt: (r) => records.push(r),
      }),
      timers.tooLong,
    )
    expect(settled).toHaveProperty('error')
    const { error } = settled as { error: Error & { lastCause?: unknown } }
    expect(isModelUnavailable(error)).toBe(true)
    expect(error.message).toContain(
      'rate_limited (HTTP 429, rate_limit_exceeded): the provider asked for 86400 s, beyond maxRetryAfterMs (60000 ms); not slept',
    )
    // The provider's own answer, its wait as asked (a gateway passes it on).
    expect(isProviderError(error.lastCause)).toBe(true)
    expect(error.lastCause).toMatchObject({ kind: 'rate_limited', retryAfterMs: DAY_S * 1000 })
    expect(records.map((r) => r.decision)).toEqual(['fail'])
    expect(fake.requests).toHaveLength(1)
    expect(timers.armed.every((ms) => ms <= 60_000)).toBe(true)
  })

  it('with admission capping cooldowns at 0 (maxRetryAfterMs: 0), the only key is not sent to again: a known wait of 0 is no other key free', async () => {
    // Admission cools the key for 0 ms, so its wait for the model was 0:
    // read as "another key free", the hint was not weighed and the one key
    // was sent the request 3 times, each refused for a day.
    const { timers, admission } = manualAdmission(60_000, { maxRetryAfterMs: 0 })
    const { fake, adapter } = await openAIModel('gpt-4o-mini')
    fake.setReply(openAIErrors.rateLimited({ retryAfterS: DAY_S }))
    const settled = await settle(
      callModel({ models: [adapter], request, limits: { admission } }),
      timers.tooLong,
    )
    expect(settled).toHaveProperty('error')
    const { error } = settled as { error: Error }
    expect(error.message).toContain('the provider asked for 86400 s, beyond maxRetryAfterMs')
    expect(fake.requests).toHaveLength(1)
  })

  it('no deadline, with a fallback: the next model answers at once', async () => {
    const { timers, admission } = manualAdmission()
    const primary = await openAIModel('gpt-4o')
    const backup = await openAIModel('gpt-4o-mini')
    primary.fake.enqueue(openAIErrors.rateLimited({ retryAfterS: DAY_S }))
    const records: AttemptRecord[] = []
    const settled = await settle(
      callModel({
        models: [primary.adapter, backup.adapter],
        request,
        limits: { admission },
        onAttempt: (r) => records.push(r),
      }),
      timers.tooLong,
    )
    expect(settled).toMatchObject({ answer: { text: 'answered by gpt-4o-mini' } })
    expect(records[0]).toMatchObject({
      decision: 'fallback',
      reason: expect.stringContaining('asked for 86400 s, beyond maxRetryAfterMs'),
    })
    expect(primary.fake.requests).toHaveLength(1)
    expect(backup.fake.requests).toHaveLength(1)
  })

  it('with admission off too (real clock, no deadline): settles at once, no wait past 60 s armed', async () => {
    const timers = watchTimers(systemClock, 60_000, true)
    vi.spyOn(systemClock, 'setTimeout').mockImplementation(timers.setTimeout)
    const { fake, adapter } = await openAIModel('gpt-4o-mini')
    fake.enqueue(openAIErrors.rateLimited({ retryAfterS: DAY_S }))
    const settled = await settle(
      callModel({ models: [adapter], request, limits: { admission: false } }),
      timers.tooLong,
    )
    expect(settled).toHaveProperty('error')
    expect((settled as { error: Error }).error.message).toContain(
      'the provider asked for 86400 s, beyond maxRetryAfterMs (60000 ms); not slept',
    )
    expect(fake.requests).toHaveLength(1)
  })

  it('the cooldown it leaves is 60 s, not a day: a call that cannot wait is refused until then (nothing sent), and once 60 s have passed one call goes through (the half-open probe)', async () => {
    const { clock, timers, admission } = manualAdmission()
    const { fake, adapter } = await openAIModel('gpt-4o-mini')
    fake.enqueue(openAIErrors.rateLimited({ retryAfterS: DAY_S }))
    const call = (deadline?: Deadline) =>
      settle(
        callModel({
          models: [adapter],
          request,
          deadline,
          limits: { admission },
          // One attempt: the cooldown is what is tested here, not the retry.
          retry: { maxAttempts: 1 },
        }),
        timers.tooLong,
      )
    expect(await call()).toHaveProperty('error')
    const target = {
      provider: adapter.name,
      endpoint: adapter.baseURL,
      keys: adapter.apiKeys,
      model: adapter.model,
    }
    expect(admission.forecast(target).waitMs).toBe(60_000)

    using short = Deadline.after(10_000, { clock })
    const refused = await call(short)
    expect(refused).toMatchObject({ error: { code: 'RATE_LIMITED', retryAfterMs: 60_000 } })
    expect(fake.requests).toHaveLength(1)

    clock.advance(60_000)
    expect(await call()).toMatchObject({ answer: { text: 'answered by gpt-4o-mini' } })
    expect(fake.requests).toHaveLength(2)
    expect(timers.armed.every((ms) => ms <= 60_000)).toBe(true)
  })

  it('a Retry-After within the cap is still waited out and retried on the same model — its jitter never taking the wait past the cap', async () => {
    // With admission (the default): the shared cooldown is the hint, as asked.
    const { clock, timers, admission } = manualAdmission()
    const first = await openAIModel('gpt-4o-mini')
    first.fake.enqueue(openAIErrors.rateLimited({ retryAfterS: 30 }))
    const records: AttemptRecord[] = []
    const waited = callModel({
      models: [first.adapter],
      request,
      limits: { admission },
      onAttempt: (r) => records.push(r),
    })
    await vi.waitFor(() => expect(timers.armed).toContain(30_000), { timeout: 10_000 })
    expect(first.fake.requests).toHaveLength(1)
    clock.advance(30_000)
    expect((await waited).text).toBe('answered by gpt-4o-mini')
    expect(records.map((r) => r.decision)).toEqual(['retry', 'success'])
    expect(first.fake.requests).toHaveLength(2)

    // Without admission, on a deadline's clock: 59 s + 9.9 % jitter would be 64.8 s; it is 60 s.
    const own = new ManualClock()
    using deadline = Deadline.after(3_600_000, { clock: own })
    // Waits only: the deadline's own timer and the HTTP client's phase timers run on this clock too.
    const ownTimers = watchTimers(own, 60_000, true)
    own.setTimeout = ownTimers.setTimeout
    const second = await openAIModel('gpt-4o')
    second.fake.enqueue(openAIErrors.rateLimited({ retryAfterS: 59 }))
    const call = callModel({
      models: [second.adapter],
      request,
      deadline,
      limits: { admission: false },
      retry: { delay: { random: () => 0.99 } },
    })
    const settled = settle(call, ownTimers.tooLong)
    await vi.waitFor(() => expect(ownTimers.armed).toContain(60_000), { timeout: 10_000 })
    own.advance(60_000)
    expect(await settled).toMatchObject({ answer: { text: 'answered by gpt-4o' } })
    expect(second.fake.requests).toHaveLength(2)
  })

  it('retry.maxRetryAfterMs overrides the default: lower, a 30 s hint is not waited; higher (with the admission’s cap), a 90 s one is', async () => {
    const low = manualAdmission(10_000)
    const a = await openAIModel('gpt-4o-mini')
    a.fake.enqueue(openAIErrors.rateLimited({ retryAfterS: 30 }))
    const refused = await settle(
      callModel({
        models: [a.adapter],
        request,
        limits: { admission: low.admission },
        retry: { maxRetryAfterMs: 10_000 },
      }),
      low.timers.tooLong,
    )
    expect(refused).toHaveProperty('error')
    expect((refused as { error: Error }).error.message).toContain(
      'the provider asked for 30 s, beyond maxRetryAfterMs (10000 ms); not slept',
    )
    expect(a.fake.requests).toHaveLength(1)

    const high = manualAdmission(120_000, { maxRetryAfterMs: 120_000 })
    const b = await openAIModel('gpt-4o')
    b.fake.enqueue(openAIErrors.rateLimited({ retryAfterS: 90 }))
    const waited = settle(
      callModel({
        models: [b.adapter],
        request,
        limits: { admission: high.admission },
        retry: { maxRetryAfterMs: 120_000 },
      }),
      high.timers.tooLong,
    )
    await vi.waitFor(() => expect(high.timers.armed).toContain(90_000), { timeout: 10_000 })
    high.clock.advance(90_000)
    expect(await waited).toMatchObject({ answer: { text: 'answered by gpt-4o' } })
    expect(b.fake.requests).toHaveLength(2)
  })
})

describe('retry.maxRetryAfterMs also bounds the calls after it: a cooldown a server’s Retry-After started is not waited past it', () => {
  it('the next call with maxRetryAfterMs 5000 is refused at once while the provider’s 30 s hold (nothing sent, no 30 s wait), naming it; with 4 s of it left, it waits those and goes', async () => {
    const { clock, timers, admission } = manualAdmission(10_000)
    const { fake, adapter } = await openAIModel('gpt-4o-mini')
    fake.enqueue(openAIErrors.rateLimited({ retryAfterS: 30 }))
    const call = () =>
      settle(
        callModel({
          models: [adapter],
          request,
          limits: { admission },
          retry: { maxRetryAfterMs: 5_000 },
        }),
        timers.tooLong,
      )
    const first = await call()
    expect((first as { error: Error }).error.message).toContain(
      'the provider asked for 30 s, beyond maxRetryAfterMs (5000 ms); not slept',
    )
    // Before: this call waited the whole 30 s in admission (to its deadline).
    const second = await call()
    expect(second).toMatchObject({ error: { code: 'RATE_LIMITED', retryAfterMs: 30_000 } })
    expect((second as { error: Error }).error.message).toContain(
      'the provider asked for 30 s, beyond maxRetryAfterMs (5000 ms); not waited',
    )
    expect(fake.requests).toHaveLength(1)

    clock.advance(26_000)
    const third = call()
    await vi.waitFor(() => expect(timers.armed).toContain(4_000), { timeout: 10_000 })
    clock.advance(4_000)
    expect(await third).toMatchObject({ answer: { text: 'answered by gpt-4o-mini' } })
    expect(fake.requests).toHaveLength(2)
  })
})
