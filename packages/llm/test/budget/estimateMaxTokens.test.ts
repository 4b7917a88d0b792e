import { describe, expect, it } from 'vitest'
import { CostBudget } from '../../src/budget/CostBudget.js'

// `estimate` is the check a caller makes before sending (README: "Policy
// pieces"). A request without `maxTokens` (a JS caller, an SDK's request
// whose cap is named `max_tokens`) was estimated at NaN — refused later by
// `assertCanSpend` as "an estimate must be a number ≥ 0", naming nothing the
// caller wrote — and a negative cap was estimated below the prompt's own
// price (-5 output tokens took the prompt's cost back): a check that passed
// for a request the budget could not afford. Refused, naming `maxTokens`.

const budget = new CostBudget({
  limitUsd: 1,
  prices: { m: { inputPerMTok: 1, outputPerMTok: 1 } },
})
const messages = [{ role: 'user' as const, content: 'hi' }]

describe('CostBudget.estimate: the request’s maxTokens', () => {
  for (const maxTokens of [undefined, Number.NaN, -5, '100']) {
    it(`${String(maxTokens)}: refused, naming maxTokens`, () => {
      expect(() => budget.estimate('m', { messages, maxTokens: maxTokens as number })).toThrow(
        /CostBudget\.estimate: maxTokens/,
      )
    })
  }

  it('a cap: the prompt plus the whole cap, as before', () => {
    const prompt = budget.estimate('m', { messages, maxTokens: 0 })
    expect(prompt).toBeGreaterThan(0)
    expect(budget.estimate('m', { messages, maxTokens: 100 })).toBeCloseTo(prompt + 100 / 1e6, 12)
  })
})
