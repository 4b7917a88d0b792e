import { describe, expect, it } from 'vitest'
import { MAX_RETRY_BUDGETS, RetryBudgetRegistry } from '../../src/retry/RetryBudgetRegistry.js'

/*
 * A service that builds adapters from its clients' input — each tenant's
 * own OpenAI-compatible endpoint, an adapter name per tenant — shares the
 * process-wide default retry budgets (`defaultRetryBudgets()`), one bucket
 * per adapter name and base URL. Every endpoint it was ever shown kept its
 * bucket for the life of the process (20,000 tenants: 20,000 buckets, ~220 B
 * each with a short URL), where admission's state for the same endpoints is
 * bounded (idleStateBounded.test.ts). The least recently asked for is let go.
 */

/** Distinct endpoints shown: several times the bound. */
const N = 20_000

const tenant = (i: number) => ({ name: 'openai', baseURL: `https://tenant-${i}.example/v1` })

describe('retry budgets: bounded, the least recently used let go', () => {
  it(`${N} distinct endpoints keep at most ${MAX_RETRY_BUDGETS} buckets`, () => {
    const budgets = new RetryBudgetRegistry()
    let most = 0
    for (let i = 0; i < N; i++) {
      budgets.forProvider(tenant(i))
      if (i % 1000 === 999) most = Math.max(most, budgets.providers().length)
    }
    expect(most).toBeGreaterThan(0)
    expect(most).toBeLessThanOrEqual(MAX_RETRY_BUDGETS)
  })

  it('an endpoint in use keeps its drained bucket while thousands of others come and go', () => {
    const budgets = new RetryBudgetRegistry({ maxTokens: 4 })
    const hot = { name: 'openai', baseURL: 'https://api.openai.com/v1' }
    const drained = budgets.forProvider(hot)
    for (let f = 0; f < 4; f++) drained.recordFailure()
    for (let i = 0; i < N; i++) {
      budgets.forProvider(tenant(i))
      // The hot endpoint is asked now and then (each of its calls reads its bucket).
      if (i % 1000 === 0) expect(budgets.forProvider(hot)).toBe(drained)
    }
    expect(budgets.forProvider(hot)).toBe(drained)
    expect(drained.canRetry()).toBe(false)
  })

  it('one forgotten comes back full, as a new endpoint starts', () => {
    const budgets = new RetryBudgetRegistry({ maxTokens: 4 })
    const first = budgets.forProvider(tenant(-1))
    first.recordFailure()
    for (let i = 0; i < N; i++) budgets.forProvider(tenant(i))
    const again = budgets.forProvider(tenant(-1))
    expect(again).not.toBe(first)
    expect(again.tokens).toBe(4)
  })
})
