import { CostBudget } from '@hourglass/llm'
import { describe, expect, it } from 'vitest'

/**
 * Prices the constructor takes (finite, ≥ 0) whose long-context cache price
 * is scaled from the base one: a scale that overflows to Infinity times a
 * cache price of 0 (or 0 times a default write price past MAX_VALUE) is NaN.
 * A NaN charge made the spend NaN, and a NaN spend never trips the limit
 * again: every later check passed.
 */
describe('long-context prices never make the spend NaN', () => {
  it('an overflowing scale times a free cache read', () => {
    const budget = new CostBudget({
      limitUsd: 1,
      prices: {
        m: {
          inputPerMTok: 0.5,
          outputPerMTok: 1,
          cachedInputPerMTok: 0,
          longContext: { aboveInputTokens: 100, inputPerMTok: 1e308, outputPerMTok: 1 },
        },
      },
    })
    const usd = budget.record('m', { inputTokens: 1000, outputTokens: 10, cachedInputTokens: 500 })
    expect(Number.isNaN(usd)).toBe(false)
    expect(Number.isNaN(budget.spentUsd)).toBe(false)
    expect(() => budget.assertCanSpend(1)).toThrow(
      expect.objectContaining({ code: 'BUDGET_EXCEEDED' }),
    )
  })

  it('a zero scale times an infinite default write price', () => {
    const budget = new CostBudget({
      limitUsd: 1,
      prices: {
        w: {
          inputPerMTok: 1e308,
          outputPerMTok: 1,
          longContext: { aboveInputTokens: 100, inputPerMTok: 0, outputPerMTok: 0 },
        },
      },
    })
    const usd = budget.record('w', {
      inputTokens: 1000,
      outputTokens: 10,
      cacheCreationInputTokens: 500,
    })
    expect(Number.isNaN(usd)).toBe(false)
    expect(() => budget.assertCanSpend(1)).toThrow(
      expect.objectContaining({ code: 'BUDGET_EXCEEDED' }),
    )
  })
})
