import { describe, expect, it } from 'vitest'
import { CostBudget } from '../../src/budget/CostBudget.js'
import { isBudgetExceeded } from '../../src/errors/BudgetExceededError.js'
import type { Usage } from '../../src/types.js'

const prices = {
  m: { inputPerMTok: 1, outputPerMTok: 1 },
  free: { inputPerMTok: 0, outputPerMTok: 0 },
}

/**
 * Usage is what a provider (or a custom adapter) reports: untrusted. A NaN
 * count once made the spend NaN — and `NaN + estimate > limit` is false, so
 * the budget never refused anything again.
 */
describe('a budget still trips after odd usage is recorded', () => {
  it('NaN, negative or missing counts are recorded as 0; the limit still holds', () => {
    const budget = new CostBudget({ limitUsd: 1, prices })
    for (const usage of [
      { inputTokens: Number.NaN, outputTokens: 1_000_000 },
      { inputTokens: -5e12, outputTokens: Number.NaN },
      { inputTokens: '7' as unknown as number, outputTokens: undefined as unknown as number },
      undefined as unknown as Usage,
    ]) {
      budget.record('m', usage)
    }
    expect(budget.spentUsd).toBe(1)
    expect(() => budget.assertCanSpend(0.01)).toThrow(
      expect.objectContaining({ code: 'BUDGET_EXCEEDED' }),
    )
  })

  it('Infinity is over any limit, and free at a price of 0 (not NaN)', () => {
    const budget = new CostBudget({ limitUsd: 1, prices })
    budget.record('free', { inputTokens: Number.POSITIVE_INFINITY, outputTokens: 0 })
    expect(budget.spentUsd).toBe(0)
    budget.record('m', { inputTokens: Number.POSITIVE_INFINITY, outputTokens: 0 })
    let refused: unknown
    try {
      budget.assertCanSpend(0)
    } catch (error) {
      refused = error
    }
    expect(isBudgetExceeded(refused)).toBe(true)
  })

  it('prices that are not an object, or a price that is null, are a TypeError naming prices', () => {
    expect(() => new CostBudget({ limitUsd: 1, prices: null as never })).toThrow(/prices/)
    expect(() => new CostBudget({ limitUsd: 1, prices: { a: null as never } })).toThrow(
      /prices\["a"\]/,
    )
  })
})
