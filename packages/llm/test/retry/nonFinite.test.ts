import { MAX_TIMER_MS } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { RETRYABLE_KINDS } from '../../src/errors/errorKinds.js'
import { decideRetry, type RetryDecisionInput } from '../../src/retry/decideRetry.js'
import { type RetryDelayInput, retryDelay } from '../../src/retry/retryDelay.js'
import type { ErrorKind, NormalizedError } from '../../src/types.js'

const error = (kind: ErrorKind, extra: Partial<NormalizedError> = {}): NormalizedError => ({
  kind,
  retryable: RETRYABLE_KINDS.has(kind),
  status: kind === 'overloaded' ? 529 : kind === 'rate_limited' ? 429 : 500,
  message: kind,
  ...extra,
})
const zero = () => 0
const BAD_NUMBERS = [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, -1]

describe('retryDelay refuses bad options rather than returning NaN', () => {
  const base: RetryDelayInput = { attempt: 1, error: { kind: 'server_error' }, random: zero }
  it.each([
    'baseDelayMs',
    'maxDelayMs',
    'jitterRatio',
    'overloadFloorMs',
    'overloadJitterMs',
    'hintJitterRatio',
  ] as const)(
    '%s: NaN, ±Infinity or negative is a RangeError naming it; no number, a TypeError',
    (name) => {
      for (const value of BAD_NUMBERS) {
        for (const kind of ['server_error', 'overloaded'] as const) {
          const input = { ...base, error: { kind, retryAfterMs: 100 }, [name]: value }
          expect(() => retryDelay(input), `${name} = ${value}`).toThrow(RangeError)
          expect(() => retryDelay(input)).toThrow(new RegExp(`retryDelay: ${name} must be`))
        }
      }
      expect(() => retryDelay({ ...base, [name]: '10' as unknown as number })).toThrow(TypeError)
    },
  )

  it('attempt: NaN or ±Infinity is a RangeError (it used to give a NaN wait)', () => {
    for (const attempt of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
      expect(() => retryDelay({ ...base, attempt })).toThrow(/retryDelay: attempt must be/)
    }
    expect(() => retryDelay({ ...base, attempt: '2' as unknown as number })).toThrow(TypeError)
  })

  it("clamps the server's hint, an untrusted value: never above the longest timer, NaN and negatives ignored", () => {
    for (const hint of [Number.POSITIVE_INFINITY, 1e300, 2 ** 40]) {
      const delay = retryDelay({ ...base, error: { kind: 'rate_limited', retryAfterMs: hint } })
      expect(delay).toEqual({ delayMs: MAX_TIMER_MS, source: 'server' })
    }
    const hinted = retryDelay({
      ...base,
      error: { kind: 'rate_limited', retryAfterMs: 1e12 },
      random: () => 0.999,
    })
    expect(hinted.delayMs).toBe(MAX_TIMER_MS) // the 10 % on top cannot pass the cap either
    for (const hint of [Number.NaN, -5, Number.NEGATIVE_INFINITY]) {
      const delay = retryDelay({ ...base, error: { kind: 'rate_limited', retryAfterMs: hint } })
      expect(delay).toEqual({ delayMs: 1000, source: 'backoff' })
    }
  })

  it('a huge attempt number still gives the capped backoff, a finite number', () => {
    expect(retryDelay({ ...base, attempt: 1e9 })).toEqual({ delayMs: 20_000, source: 'backoff' })
  })
})

describe('decideRetry refuses bad input rather than retrying without end', () => {
  const base: RetryDecisionInput = { error: error('server_error'), attempt: 1, random: zero }

  it('a NaN max529Retries or overloads is refused: an overload used to be retried for ever', () => {
    const overloaded = { ...base, error: error('overloaded'), maxAttempts: 10, attempt: 1 }
    expect(() => decideRetry({ ...overloaded, max529Retries: Number.NaN, overloads: 50 })).toThrow(
      /decideRetry: max529Retries must be/,
    )
    expect(() => decideRetry({ ...overloaded, overloads: Number.NaN })).toThrow(
      /decideRetry: overloads must be/,
    )
  })

  it.each([
    ['attempt', [Number.NaN, Number.POSITIVE_INFINITY, -1]],
    ['maxAttempts', [Number.NaN]],
    ['max529Retries', [Number.NaN, -1]],
    ['overloads', [Number.NaN, Number.POSITIVE_INFINITY, -1]],
    ['remainingMs', [Number.NaN]],
    ['minAttemptMs', [Number.NaN, -1]],
    ['waitMs', [Number.NaN, -1]],
    ['maxRetryAfterMs', [Number.NaN, Number.POSITIVE_INFINITY, -1]],
    ['latencyMs', [Number.NaN, Number.POSITIVE_INFINITY, -1]],
    ['baseDelayMs', [Number.NaN, Number.POSITIVE_INFINITY, -1]],
  ] as const)('%s: %j are RangeErrors naming it', (name, values) => {
    for (const value of values) {
      expect(() => decideRetry({ ...base, [name]: value }), `${name} = ${value}`).toThrow(
        new RegExp(`decideRetry: ${name} must be`),
      )
    }
    expect(() => decideRetry({ ...base, [name]: '1' as unknown as number })).toThrow(TypeError)
  })

  it("the fallback's outlook is checked too", () => {
    const limited = { ...base, error: error('rate_limited'), hasFallback: true }
    expect(() =>
      decideRetry({ ...limited, fallback: { label: 'b', waitMs: Number.NaN, latencyMs: 0 } }),
    ).toThrow(/decideRetry: fallback.waitMs must be/)
    expect(() =>
      decideRetry({ ...limited, fallback: { label: 'b', waitMs: 0, latencyMs: Number.NaN } }),
    ).toThrow(/decideRetry: fallback.latencyMs must be/)
  })

  it('documented values still work: Infinity for remainingMs (no deadline), max529Retries and maxAttempts (clamped), a waitMs of Infinity (every key retired)', () => {
    expect(
      decideRetry({
        ...base,
        remainingMs: Number.POSITIVE_INFINITY,
        maxAttempts: Number.POSITIVE_INFINITY,
      }),
    ).toMatchObject({ action: 'retry', delayMs: 1000 })
    expect(
      decideRetry({ ...base, error: error('overloaded'), max529Retries: Number.POSITIVE_INFINITY }),
    ).toMatchObject({ action: 'retry' })
    const retired = decideRetry({ ...base, waitMs: Number.POSITIVE_INFINITY, hasFallback: true })
    expect(retired.action).toBe('fallback')
  })

  it('a server hint of Infinity is never slept without a deadline: beyond maxRetryAfterMs, it is given up on', () => {
    const decision = decideRetry({
      ...base,
      error: error('rate_limited', { retryAfterMs: Number.POSITIVE_INFINITY }),
    })
    expect(decision).toMatchObject({
      action: 'fail',
      waitMs: MAX_TIMER_MS,
      reason: expect.stringMatching(/beyond maxRetryAfterMs \(60000 ms\); not slept$/),
    })
  })
})
