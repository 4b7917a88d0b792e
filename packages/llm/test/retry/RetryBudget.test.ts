import { describe, expect, it } from 'vitest'
import { decideRetry } from '../../src/retry/decideRetry.js'
import { RetryBudget } from '../../src/retry/RetryBudget.js'
import { RetryBudgetRegistry } from '../../src/retry/RetryBudgetRegistry.js'

describe('RetryBudget', () => {
  it('starts full, costs 1 per failure, and allows retries only while more than half is left', () => {
    const budget = new RetryBudget()
    expect(budget.tokens).toBe(10)
    const allowed: boolean[] = []
    for (let i = 0; i < 7; i++) {
      budget.recordFailure()
      allowed.push(budget.canRetry())
    }
    // 9, 8, 7, 6 > 5 allow; 5, 4, 3 do not.
    expect(allowed).toEqual([true, true, true, true, false, false, false])
  })

  it('refunds tokenRatio per success and never exceeds maxTokens or drops below 0', () => {
    const budget = new RetryBudget({ maxTokens: 10, tokenRatio: 0.1 })
    for (let i = 0; i < 50; i++) budget.recordFailure()
    expect(budget.tokens).toBe(0)
    for (let i = 0; i < 51; i++) budget.recordSuccess()
    expect(budget.tokens).toBeCloseTo(5.1, 9)
    expect(budget.canRetry()).toBe(true)
    for (let i = 0; i < 1000; i++) budget.recordSuccess()
    expect(budget.tokens).toBe(10)
  })

  // Tenths summed as floats drift: 0.1 ten times is 0.9999999999999999.
  // At exactly half the bucket left a retry is refused, but the drifted
  // count read 5.000000000000001 and allowed one (the reverse of a count
  // one float step short of a whole one).
  it('counts refills exactly: a bucket at exactly half after tenths refunded still refuses a retry', () => {
    const budget = new RetryBudget()
    const run = (failures: number, successes: number) => {
      for (let i = 0; i < failures; i++) budget.recordFailure()
      for (let i = 0; i < successes; i++) budget.recordSuccess()
    }
    // 10 → 1, +0.9 → 1.9, −1 → 0.9, +1 → 1.9, −1 → 0.9, +4.1 → 5.
    run(9, 9)
    run(1, 10)
    run(1, 41)
    expect(budget.tokens).toBe(5)
    expect(budget.canRetry()).toBe(false)
    // One failure, then ten successes: a whole token back, not 0.9999999999999999.
    run(1, 10)
    expect(budget.tokens).toBe(5)
  })

  // Counted to a billionth, a ratio of no whole billionths was rounded
  // after each refill: 2/3 up, to 0.666666667, and three refills from 3
  // read 5.000000001 — a retry exact arithmetic (3 + 3 × 2/3 = 5, exactly
  // half) refuses. Rounded down once, counting errs on the refusing side.
  it('a tokenRatio of no whole billionths (2/3) is counted rounded down: three refills from 3 stay under half', () => {
    const budget = new RetryBudget({ tokenRatio: 2 / 3 })
    expect(budget.tokenRatio).toBe(0.666666666)
    for (let i = 0; i < 7; i++) budget.recordFailure()
    for (let i = 0; i < 3; i++) budget.recordSuccess()
    expect(budget.tokens).toBe(4.999999998)
    expect(budget.canRetry()).toBe(false)
    // A decimal ratio is kept as given.
    expect(new RetryBudget({ tokenRatio: 0.123456789 }).tokenRatio).toBe(0.123456789)
  })

  // 1e-10 counted to a billionth refilled nothing, ever (a bucket drained
  // for good); 6e-10 refilled 1e-9, 67 % more than asked.
  it('refuses a tokenRatio under a billionth other than 0: counted, it would never refill', () => {
    for (const tokenRatio of [1e-10, 6e-10]) {
      expect(() => new RetryBudget({ tokenRatio })).toThrow(RangeError)
      expect(() => new RetryBudget({ tokenRatio })).toThrow(
        /RetryBudget: tokenRatio must be 0 or at least a billionth/,
      )
    }
    expect(new RetryBudget({ tokenRatio: 0 }).tokenRatio).toBe(0)
    expect(new RetryBudget({ tokenRatio: 1e-9 }).tokenRatio).toBe(1e-9)
  })

  it('never counts above maxTokens, one of no whole billionths (2/3) included', () => {
    const budget = new RetryBudget({ maxTokens: 2 / 3 })
    budget.recordFailure()
    for (let i = 0; i < 10; i++) budget.recordSuccess()
    expect(budget.tokens).toBe(2 / 3)
    budget.recordFailure()
    budget.refundFailure()
    expect(budget.tokens).toBe(2 / 3)
  })

  it('bounds a 429 storm: 100 concurrent calls that all get 429 send at most 1.3 attempts each', () => {
    // Every upstream answer is a 429; each call records its failure and asks
    // the policy whether to retry, as callModel does.
    const budget = new RetryBudget()
    const attempts = new Array<number>(100).fill(1)
    let pending = attempts.map((_, call) => call)
    while (pending.length > 0) {
      const next: number[] = []
      for (const call of pending) {
        budget.recordFailure()
        const decision = decideRetry({
          error: { kind: 'rate_limited', retryable: true, status: 429, message: 'slow down' },
          attempt: attempts[call]!,
          maxAttempts: 10,
          retryBudget: budget,
          random: Math.random,
        })
        if (decision.action === 'retry') {
          attempts[call]! += 1
          next.push(call)
        }
      }
      pending = next
    }
    const total = attempts.reduce((a, b) => a + b, 0)
    expect(total / 100).toBeLessThanOrEqual(1.3)
    // Without the budget the same storm sends 10 per call.
    expect(total).toBeGreaterThan(100)
  })

  it('rejects a bucket that could never allow a retry', () => {
    expect(() => new RetryBudget({ maxTokens: 0 })).toThrow(/maxTokens/)
    expect(() => new RetryBudget({ tokenRatio: -1 })).toThrow(/tokenRatio/)
    expect(() => new RetryBudgetRegistry({ maxTokens: Number.NaN })).toThrow(/maxTokens/)
  })
})

describe('RetryBudgetRegistry', () => {
  it('keeps one bucket per provider, so one provider’s storm leaves the others retrying', () => {
    const registry = new RetryBudgetRegistry({ maxTokens: 4 })
    const openai = registry.get('openai')
    expect(registry.get('openai')).toBe(openai)
    for (let i = 0; i < 4; i++) openai.recordFailure()
    expect(openai.canRetry()).toBe(false)
    expect(registry.get('anthropic').canRetry()).toBe(true)
    expect(registry.get('anthropic').maxTokens).toBe(4)
    expect(registry.providers()).toEqual(['openai', 'anthropic'])
  })
})
