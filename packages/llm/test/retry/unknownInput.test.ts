import { describe, expect, it } from 'vitest'
import { decideRetry } from '../../src/retry/decideRetry.js'
import { retryDelay } from '../../src/retry/retryDelay.js'
import type { NormalizedError } from '../../src/types.js'

// Both are exported policy pieces, called with an object of named inputs.
// A name neither reads was ignored and its default decided: `baseDelay:
// 10` waited the 1 s default, `maxRetries: 1` retried a third time — as
// `callModel`'s own misspelt options did before it refused them.

const serverError: NormalizedError = {
  kind: 'server_error',
  retryable: true,
  status: 500,
  message: 'HTTP 500',
}
const none = () => 0

describe('retryDelay and decideRetry refuse inputs they do not read', () => {
  it('retryDelay: a misspelt delay option is a TypeError naming it and the option meant, not the default wait', () => {
    const asked = { attempt: 1, error: serverError, random: none, baseDelay: 10 }
    expect(() => retryDelay(asked as never)).toThrow(TypeError)
    expect(() => retryDelay(asked as never)).toThrow(
      /"baseDelay" \(did you mean baseDelayMs\?\).*retryDelay/,
    )
    expect(retryDelay({ attempt: 1, error: serverError, random: none, baseDelayMs: 10 })).toEqual({
      delayMs: 10,
      source: 'backoff',
    })
  })

  it('decideRetry: a misspelt input is a TypeError naming it, not a third attempt', () => {
    const asked = { error: serverError, attempt: 2, maxAttempt: 2, random: none }
    expect(() => decideRetry(asked as never)).toThrow(TypeError)
    expect(() => decideRetry(asked as never)).toThrow(
      /"maxAttempt" \(did you mean maxAttempts\?\).*decideRetry/,
    )
    expect(() =>
      decideRetry({ error: serverError, attempt: 1, remainingTimeMs: 5 } as never),
    ).toThrow(/unknown option "remainingTimeMs"; decideRetry\(\) takes .*remainingMs/)
    expect(
      decideRetry({ error: serverError, attempt: 2, maxAttempts: 2, random: none }),
    ).toMatchObject({
      action: 'fail',
      why: 'max-attempts',
    })
  })

  it('every documented input is still read, none refused', () => {
    const decision = decideRetry({
      error: { ...serverError, kind: 'rate_limited', status: 429 },
      attempt: 1,
      maxAttempts: 3,
      overloads: 0,
      max529Retries: 3,
      priority: 'foreground',
      remainingMs: 60_000,
      minAttemptMs: 0,
      maxRetryAfterMs: 60_000,
      hasFallback: false,
      retryBudget: undefined,
      waitMs: 5,
      latencyMs: 1,
      fallback: undefined,
      baseDelayMs: 1,
      maxDelayMs: 1,
      jitterRatio: 0,
      overloadFloorMs: 1,
      overloadJitterMs: 0,
      hintJitterRatio: 0,
      random: none,
    })
    expect(decision).toMatchObject({ action: 'retry', delayMs: 5 })
  })
})
