import { describe, expect, it } from 'vitest'
import { CostBudget } from '../../src/budget/CostBudget.js'

const prices = { 'gpt-4o-mini': { inputPerMTok: 0.15, outputPerMTok: 0.6 } }

describe('CostBudget: a key it does not read is refused, not ignored', () => {
  it('refuses a misspelled option, naming the key, the nearest option and the taker', () => {
    // Ignored, allowUnPriced left unpriced models refused (and a misspelled
    // providerprices priced every attempt at the generic price).
    const misspelled = { limitUsd: 1, prices, allowUnPriced: true }
    expect(() => new CostBudget(misspelled as never)).toThrow(TypeError)
    expect(() => new CostBudget(misspelled as never)).toThrow(
      /unknown option "allowUnPriced" \(did you mean allowUnpriced\?\); new CostBudget\(\) takes limitUsd, prices, providerPrices, allowUnpriced/,
    )
  })

  it('names the limit option when the limit was spelled another way', () => {
    const other = { limitUsd: 1, maxUsd: 2, prices }
    expect(() => new CostBudget(other as never)).toThrow(/unknown option "maxUsd"/)
  })

  it('refuses a misspelled price field, which left the reasoning uncounted', () => {
    const typo = {
      'deepseek-r1': { inputPerMTok: 1, outputPerMTok: 2, uncappedReasoningToken: 32_000 },
    }
    expect(() => new CostBudget({ limitUsd: 1, prices: typo as never })).toThrow(
      /unknown field "uncappedReasoningToken" \(did you mean uncappedReasoningTokens\?\); CostBudget: prices\["deepseek-r1"\] takes/,
    )
    const tierTypo = {
      'gpt-4o': {
        inputPerMTok: 1,
        outputPerMTok: 2,
        serviceTiers: { priority: { inputPerMTok: 2, outputPerMTok: 4, cachedInputPerMtok: 1 } },
      },
    }
    expect(() => new CostBudget({ limitUsd: 1, prices: tierTypo as never })).toThrow(
      /unknown field "cachedInputPerMtok" \(did you mean cachedInputPerMTok\?\)/,
    )
    const providerTypo = {
      openai: { 'gpt-4o': { inputPerMTok: 1, outputPerMTok: 2, serviceTier: {} } },
    }
    expect(
      () => new CostBudget({ limitUsd: 1, prices: {}, providerPrices: providerTypo as never }),
    ).toThrow(
      /unknown field "serviceTier" \(did you mean serviceTiers\?\); CostBudget: providerPrices\["openai"\]\["gpt-4o"\]/,
    )
  })

  it('still takes every option and field it reads', () => {
    const full = {
      'gpt-4o': {
        inputPerMTok: 1,
        outputPerMTok: 2,
        cachedInputPerMTok: 0.5,
        cacheCreationInputPerMTok: 2,
        uncappedReasoningTokens: 0,
        serviceTiers: {
          priority: {
            inputPerMTok: 2,
            outputPerMTok: 4,
            cachedInputPerMTok: 1,
            cacheCreationInputPerMTok: 4,
          },
        },
      },
    }
    const budget = new CostBudget({
      limitUsd: 1,
      prices: full,
      providerPrices: { openai: full },
      allowUnpriced: true,
    })
    expect(budget.limitUsd).toBe(1)
  })
})
