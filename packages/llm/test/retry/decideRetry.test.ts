import { describe, expect, it } from 'vitest'
import { RETRYABLE_KINDS } from '../../src/errors/errorKinds.js'
import { decideRetry } from '../../src/retry/decideRetry.js'
import { RetryBudget } from '../../src/retry/RetryBudget.js'
import type { ErrorKind, NormalizedError } from '../../src/types.js'

const error = (kind: ErrorKind, extra: Partial<NormalizedError> = {}): NormalizedError => ({
  kind,
  retryable: RETRYABLE_KINDS.has(kind),
  status: { rate_limited: 429, overloaded: 529, bad_request: 400 }[kind as string] ?? 500,
  message: kind,
  ...extra,
})
const zero = () => 0

describe('decideRetry', () => {
  it('retries a transient failure after the backoff, naming the next attempt and the wait', () => {
    expect(decideRetry({ error: error('server_error'), attempt: 1, random: zero })).toEqual({
      action: 'retry',
      delayMs: 1000,
      delaySource: 'backoff',
      reason: 'server_error (HTTP 500): retry 2 of 3 after 1000 ms (backoff)',
    })
    for (const kind of ['rate_limited', 'timeout', 'network'] as const) {
      expect(decideRetry({ error: error(kind), attempt: 2, random: zero })).toMatchObject({
        action: 'retry',
        delayMs: 2000,
      })
    }
  })

  it('never retries or falls back on a bad request, a content-policy refusal or a too-long prompt', () => {
    for (const kind of ['bad_request', 'content_policy', 'context_too_long'] as const) {
      const decision = decideRetry({ error: error(kind), attempt: 1, hasFallback: true })
      expect(decision.action).toBe('fail')
      expect(decision.reason).toMatch(/permanent for this request: never retried/)
    }
  })

  it('x-should-retry: false on a 500 stops retries (falls back when it can, else fails)', () => {
    const noRetry = error('server_error', { retryable: false })
    expect(decideRetry({ error: noRetry, attempt: 1 })).toEqual({
      action: 'fail',
      reason: 'server_error (HTTP 500) is not retryable',
      why: 'not-retryable',
    })
    expect(decideRetry({ error: noRetry, attempt: 1, hasFallback: true }).action).toBe('fallback')
  })

  it('a permanent provider-side failure (quota, auth) falls back rather than retrying', () => {
    const quota = error('quota_exhausted', { status: 429, providerCode: 'insufficient_quota' })
    expect(decideRetry({ error: quota, attempt: 1, hasFallback: true })).toEqual({
      action: 'fallback',
      reason: 'quota_exhausted (HTTP 429, insufficient_quota) is not retryable',
      why: 'not-retryable',
    })
    expect(decideRetry({ error: error('auth', { status: 401 }), attempt: 1 }).action).toBe('fail')
  })

  it('Retry-After: 2 with 500 ms left fails at once with a reason, without sleeping', () => {
    const decision = decideRetry({
      error: error('rate_limited', { retryAfterMs: 2000 }),
      attempt: 1,
      remainingMs: 500,
      random: zero,
    })
    expect(decision).toEqual({
      action: 'fail',
      waitMs: 2000,
      reason:
        'rate_limited (HTTP 429): server-requested wait of 2000 ms does not fit in the 500 ms left; not slept',
      why: 'no-budget',
    })
  })

  it('a wait that does not fit falls back at once when another model is left', () => {
    const decision = decideRetry({
      error: error('rate_limited', { retryAfterMs: 2000 }),
      attempt: 1,
      remainingMs: 1500,
      hasFallback: true,
      random: zero,
    })
    expect(decision).toMatchObject({ action: 'fallback', waitMs: 2000 })
  })

  it('counts the time the next attempt needs: wait + minAttemptMs must fit', () => {
    const input = { error: error('server_error'), attempt: 1, random: zero, minAttemptMs: 600 }
    expect(decideRetry({ ...input, remainingMs: 1600 }).action).toBe('retry')
    expect(decideRetry({ ...input, remainingMs: 1599 }).action).toBe('fail')
    expect(decideRetry({ ...input, remainingMs: 500, hasFallback: true })).toMatchObject({
      action: 'fail',
      reason: expect.stringMatching(/500 ms left, too little for another attempt/),
    })
  })

  it('without a deadline an attempt fits whatever minAttemptMs is, Infinity too', () => {
    const input = {
      error: error('rate_limited', { retryAfterMs: 1000 }),
      attempt: 1,
      maxAttempts: 3,
    }
    expect(decideRetry({ ...input, minAttemptMs: Number.POSITIVE_INFINITY }).action).toBe('retry')
    // With a deadline, Infinity still refuses: no time left is enough.
    expect(
      decideRetry({ ...input, minAttemptMs: Number.POSITIVE_INFINITY, remainingMs: 1e12 }),
    ).toMatchObject({ action: 'fail', why: 'no-budget' })
  })

  it('a wait that ends exactly at the deadline is not slept: the fallback is asked now, or the call fails now', () => {
    // 1000 ms backoff (attempt 1, no jitter) with exactly 1000 ms left: after
    // it no attempt can go out. Slept, the call ended by its deadline with a
    // record saying `retry` and the fallback never asked.
    const input = { error: error('server_error'), attempt: 1, random: zero, remainingMs: 1000 }
    expect(decideRetry(input)).toMatchObject({
      action: 'fail',
      why: 'no-budget',
      reason:
        'server_error (HTTP 500): backoff wait of 1000 ms does not fit in the 1000 ms left; not slept',
    })
    expect(decideRetry({ ...input, hasFallback: true })).toMatchObject({ action: 'fallback' })
    // A cooldown admission says ends at the deadline: the same.
    expect(
      decideRetry({ ...input, error: error('rate_limited'), waitMs: 1000, hasFallback: true }),
    ).toMatchObject({ action: 'fallback', why: 'no-budget' })
    // One ms to spare is a retry.
    expect(decideRetry({ ...input, remainingMs: 1001 }).action).toBe('retry')
  })

  it('background work fails at once on overload, even with a fallback model', () => {
    const decision = decideRetry({
      error: error('overloaded'),
      attempt: 1,
      priority: 'background',
      hasFallback: true,
    })
    expect(decision).toEqual({
      action: 'fail',
      reason: 'overloaded (HTTP 529): background work fails at once on overload',
      why: 'background',
    })
  })

  it('foreground work retries overloads up to max529Retries, then falls back', () => {
    const base = { attempt: 1, maxAttempts: 10, hasFallback: true, random: zero }
    expect(decideRetry({ ...base, error: error('overloaded'), overloads: 3 })).toMatchObject({
      action: 'retry',
      delayMs: 5000,
      delaySource: 'overload',
    })
    expect(decideRetry({ ...base, error: error('overloaded'), overloads: 4 })).toMatchObject({
      action: 'fallback',
      reason: expect.stringMatching(/4 overload\(s\), more than max529Retries \(3\)/),
    })
    expect(
      decideRetry({ ...base, error: error('overloaded'), overloads: 1, max529Retries: 0 }).action,
    ).toBe('fallback')
  })

  it('stops after maxAttempts (default 3), and caps maxAttempts at 10', () => {
    const e = error('server_error')
    expect(decideRetry({ error: e, attempt: 2, random: zero }).action).toBe('retry')
    expect(decideRetry({ error: e, attempt: 3, random: zero })).toEqual({
      action: 'fail',
      reason: 'server_error (HTTP 500): attempts exhausted (3 of 3)',
      why: 'max-attempts',
    })
    expect(decideRetry({ error: e, attempt: 9, maxAttempts: 50, random: zero }).action).toBe(
      'retry',
    )
    expect(decideRetry({ error: e, attempt: 10, maxAttempts: 50 }).reason).toMatch(/10 of 10/)
    expect(decideRetry({ error: e, attempt: 1, maxAttempts: 0 }).reason).toMatch(/1 of 1/)
  })

  it('does not retry while the provider retry budget is drained', () => {
    const budget = new RetryBudget({ maxTokens: 4 })
    const input = { error: error('rate_limited'), attempt: 1, retryBudget: budget, random: zero }
    budget.recordFailure() // 3 tokens left > 2
    expect(decideRetry(input).action).toBe('retry')
    budget.recordFailure() // 2 left, not more than half
    expect(decideRetry({ ...input, hasFallback: true })).toEqual({
      action: 'fallback',
      reason: 'rate_limited (HTTP 429): provider retry budget drained (2.0 of 4 tokens)',
      why: 'retry-budget',
    })
  })
})

describe('decideRetry: the earliest answer wins', () => {
  const ready = { label: 'small@backup', waitMs: 0, latencyMs: undefined }

  it('a rate limit or overload falls back at once to a model expected to answer sooner (no history = now)', () => {
    for (const kind of ['rate_limited', 'overloaded'] as const) {
      const decision = decideRetry({
        error: error(kind),
        attempt: 1,
        hasFallback: true,
        fallback: ready,
        random: zero,
      })
      expect(decision.action).toBe('fallback')
      expect(decision.reason).toMatch(
        /small@backup ~0 ms \(ready, no latency history\) is expected to answer before this model ~\d+ ms/,
      )
    }
  })

  it('stays when its wait plus its latency is no later than the fallback’s expected answer', () => {
    const slowBackup = { label: 'small@backup', waitMs: 0, latencyMs: 3000 }
    const decision = decideRetry({
      error: error('rate_limited', { retryAfterMs: 200 }),
      attempt: 1,
      hasFallback: true,
      fallback: slowBackup,
      latencyMs: 800,
      waitMs: 200,
    })
    expect(decision).toMatchObject({ action: 'retry', delayMs: 200, delaySource: 'server' })
    // A tie stays on the list's order too.
    expect(
      decideRetry({
        error: error('overloaded'),
        attempt: 1,
        hasFallback: true,
        fallback: slowBackup,
        waitMs: 3000,
      }).action,
    ).toBe('retry')
  })

  it('a model with another key free now (otherKeyFree) is retried on it, not left for one merely quicker', () => {
    const decision = decideRetry({
      error: error('rate_limited', { retryAfterMs: 20_000 }),
      attempt: 1,
      hasFallback: true,
      fallback: ready,
      latencyMs: 800,
      waitMs: 0,
      otherKeyFree: true,
    })
    expect(decision).toMatchObject({ action: 'retry', delayMs: 0 })
  })

  it('a known wait of 0 alone is no other key free: a "retry now" on the only key still leaves for one expected sooner', () => {
    // `Retry-After: 0` cools the refused key for 0 ms: admission's wait is 0
    // with that key alone, and the refused key was sent to again.
    const decision = decideRetry({
      error: error('rate_limited', { retryAfterMs: 0 }),
      attempt: 1,
      hasFallback: true,
      fallback: ready,
      latencyMs: 800,
      waitMs: 0,
    })
    expect(decision).toMatchObject({ action: 'fallback', why: 'fallback-sooner' })
  })

  it('leaves other failures to the attempt rules (a 500 is retried on the same model)', () => {
    const decision = decideRetry({
      error: error('server_error'),
      attempt: 1,
      hasFallback: true,
      fallback: ready,
      random: zero,
    })
    expect(decision.action).toBe('retry')
  })

  it('a server hint beyond maxRetryAfterMs (default 60 s) is not slept, deadline or not: fall back, else fail, naming it', () => {
    const day = error('rate_limited', { retryAfterMs: 86_400_000 })
    for (const remainingMs of [undefined, Number.POSITIVE_INFINITY, 2 * 86_400_000]) {
      expect(decideRetry({ error: day, attempt: 1, remainingMs, random: zero })).toEqual({
        action: 'fail',
        waitMs: 86_400_000,
        reason:
          'rate_limited (HTTP 429): the provider asked for 86400 s, beyond maxRetryAfterMs (60000 ms); not slept',
        why: 'retry-after-too-long',
      })
    }
    expect(decideRetry({ error: day, attempt: 1, hasFallback: true })).toMatchObject({
      action: 'fallback',
    })
    // Any kind with a hint (a 503 with Retry-After), and a shared cooldown's known wait too.
    const unavailable = error('server_error', { status: 503, retryAfterMs: 3_600_000 })
    expect(decideRetry({ error: unavailable, attempt: 1 }).action).toBe('fail')
    expect(decideRetry({ error: day, attempt: 1, waitMs: 60_000 }).action).toBe('fail')
    // The cap itself is waited; one millisecond more is not.
    const atCap = decideRetry({
      error: error('rate_limited', { retryAfterMs: 60_000 }),
      attempt: 1,
      random: zero,
    })
    expect(atCap).toMatchObject({ action: 'retry', delayMs: 60_000, delaySource: 'server' })
    const past = error('rate_limited', { retryAfterMs: 60_001 })
    expect(decideRetry({ error: past, attempt: 1 }).reason).toMatch(
      /asked for 60\.001 s, beyond maxRetryAfterMs/,
    )
  })

  it('a hint beyond the cap does not stop a retry on another key that is free now (otherKeyFree)', () => {
    const day = error('rate_limited', { retryAfterMs: 86_400_000 })
    expect(decideRetry({ error: day, attempt: 1, waitMs: 0, otherKeyFree: true })).toMatchObject({
      action: 'retry',
      delayMs: 0,
    })
  })

  it('another key free now and no known wait: the retry goes at once, not after the day the refused key was asked to wait', () => {
    // The hint is the refused key's, not the free key's: with no known
    // wait, the delay fell back to the hint, and the retry "on the free key"
    // was slept for a day.
    const day = error('rate_limited', { retryAfterMs: 86_400_000 })
    expect(decideRetry({ error: day, attempt: 1, otherKeyFree: true })).toMatchObject({
      action: 'retry',
      delayMs: 0,
    })
  })

  it('another key free does not lift the backoff of a 5xx or an overload: they are the provider’s', () => {
    // With no known wait, a free key made every kind's delay 0: a caller of
    // decideRetry retried a failing or overloaded provider at once.
    const fiveHundred = decideRetry({
      error: error('server_error', { status: 500 }),
      attempt: 1,
      otherKeyFree: true,
    })
    expect(fiveHundred).toMatchObject({ action: 'retry' })
    expect(fiveHundred.action === 'retry' && fiveHundred.delayMs).toBeGreaterThan(0)
    const overload = decideRetry({
      error: error('overloaded', { status: 529 }),
      attempt: 1,
      otherKeyFree: true,
    })
    expect(overload).toMatchObject({ action: 'retry' })
    expect(overload.action === 'retry' && overload.delayMs).toBeGreaterThanOrEqual(5000)
  })

  it('a known wait of 0 alone does not lift the cap: the key just refused, cooled for 0 ms, is no other key', () => {
    // Admission({ maxRetryAfterMs: 0 }) cools a key for 0 ms whatever the
    // hint: its wait was 0, and the one key was sent 3 times.
    const day = error('rate_limited', { retryAfterMs: 86_400_000 })
    expect(decideRetry({ error: day, attempt: 1, waitMs: 0 })).toMatchObject({
      action: 'fail',
      reason: expect.stringMatching(/asked for 86400 s, beyond maxRetryAfterMs/),
    })
  })

  it('maxRetryAfterMs overrides the default; a hint within it keeps its jitter, never past it', () => {
    const thirty = error('rate_limited', { retryAfterMs: 30_000 })
    expect(decideRetry({ error: thirty, attempt: 1, maxRetryAfterMs: 10_000 })).toMatchObject({
      action: 'fail',
      reason: expect.stringMatching(/asked for 30 s, beyond maxRetryAfterMs \(10000 ms\)/),
    })
    const day = error('rate_limited', { retryAfterMs: 86_400_000 })
    expect(
      decideRetry({ error: day, attempt: 1, maxRetryAfterMs: 86_400_000, random: zero }),
    ).toMatchObject({ action: 'retry', delayMs: 86_400_000 })
    // 59 s + up to 10 % would be 64.9 s: the wait stops at the cap, never below the hint.
    const high = () => 0.99
    const nearCap = error('rate_limited', { retryAfterMs: 59_000 })
    expect(decideRetry({ error: nearCap, attempt: 1, random: high })).toMatchObject({
      action: 'retry',
      delayMs: 60_000,
    })
    expect(
      decideRetry({ error: nearCap, attempt: 1, random: high, maxRetryAfterMs: 120_000 }),
    ).toMatchObject({ action: 'retry', delayMs: 64_841 })
    expect(decideRetry({ error: thirty, attempt: 1, random: high })).toMatchObject({
      delayMs: 32_970,
    })
  })

  it('a known wait (a shared cooldown) replaces the computed one', () => {
    const decision = decideRetry({
      error: error('overloaded'),
      attempt: 1,
      waitMs: 0,
      random: zero,
    })
    expect(decision).toMatchObject({ action: 'retry', delayMs: 0, delaySource: 'overload' })
  })
})
