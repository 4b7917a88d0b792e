import { reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { chargeBilledFailure } from '../../src/budget/billedFailure.js'
import { CostBudget } from '../../src/budget/CostBudget.js'
import { callModel } from '../../src/call/callModel.js'
import { isBudgetExceeded } from '../../src/errors/BudgetExceededError.js'
import { useFakes } from '../call/support/fakes.js'

// OpenAI's Predicted Outputs: the predicted tokens the answer does not use
// are billed as output ("rejected prediction tokens", in
// `completion_tokens`), beyond `max_completion_tokens`. Counted only as
// prompt text (at the input price), a request was held at a fraction of
// what it may be billed: one call alone, checked at $0.0061 against a
// $0.008 limit, was billed $0.0136 — 170% of it. The gateway held it so
// for itself (its own copy of the rule, now gone); callModel did not.

const fakes = useFakes()
const predicted = 'const x = 1;\n'.repeat(300) // 3,900 characters: ~1,000 tokens
const request = {
  messages: [{ role: 'user' as const, content: 'Rename x to y' }],
  maxTokens: 100,
  extra: { prediction: { type: 'content', content: predicted } },
}

describe('a prediction is held as output', () => {
  it('the estimate holds every predicted token as output', () => {
    // Input free, output $1 a token: the estimate is the output it holds.
    const budget = new CostBudget({
      limitUsd: 1e9,
      prices: { m: { inputPerMTok: 0, outputPerMTok: 1e6 } },
    })
    expect(budget.estimate('m', request)).toBeGreaterThanOrEqual(100 + 975)
    // Without a prediction: the cap alone, as before.
    expect(budget.estimate('m', { ...request, extra: undefined })).toBe(100)
  })

  it('a call that could be billed past the limit is not sent', async () => {
    const fake = await fakes.start({
      dialect: 'openai',
      reply: reply.text('ok', { usage: { inputTokens: 30, outputTokens: 1100 } }),
    })
    const adapter = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-p', model: 'gpt-4o' }),
    )
    const budget = new CostBudget({
      limitUsd: 0.008,
      prices: { 'gpt-4o': { inputPerMTok: 2.5, outputPerMTok: 10 } },
    })
    await expect(callModel({ models: [adapter], request, limits: { budget } })).rejects.toSatisfy(
      isBudgetExceeded,
    )
    expect(fake.requests).toHaveLength(0)
    expect(budget.spentUsd).toBe(0)
    // The same call without a prediction fits, is sent and is charged.
    await callModel({
      models: [adapter],
      request: { ...request, extra: undefined },
      limits: { budget },
    })
    expect(fake.requests).toHaveLength(1)
    expect(budget.spentUsd).toBeGreaterThan(0)
  })

  it('a stream cut with its usage unknown is charged what was delivered, up to the cap and the prediction', () => {
    // Input free, output $1 a token: the charge is the output counted.
    const budget = new CostBudget({
      limitUsd: 1e9,
      prices: { m: { inputPerMTok: 0, outputPerMTok: 1e6 } },
    })
    // 8,000 characters delivered (~2,000 tokens) of an edit predicted at ~1,000
    // tokens, capped at 100: capped at maxTokens alone it was charged 100.
    // Input free: the estimate is the output held, maxTokens and the prediction.
    const held = budget.estimate('m', request)
    expect(held).toBeLessThan(2000)
    expect(
      chargeBilledFailure(budget, 'm', request, {
        kind: 'cut',
        outputWeight: 8000,
        usage: undefined,
      }),
    ).toBe(held)
  })
})
