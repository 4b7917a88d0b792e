import { reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { CostBudget } from '../../src/budget/CostBudget.js'
import { callModel } from '../../src/call/callModel.js'
import { isBudgetExceeded } from '../../src/errors/BudgetExceededError.js'
import {
  isOutputTruncated,
  type OutputTruncatedError,
} from '../../src/errors/OutputTruncatedError.js'
import { useFakes, user } from './support/fakes.js'

const fakes = useFakes()

/** $10 per million output tokens: 100 tokens cost $0.001, the raised cap's 200 twice that. */
const prices = { 'gpt-4o': { inputPerMTok: 1, outputPerMTok: 10 } }

async function cutAnswerOn(budget: CostBudget) {
  const fake = await fakes.start({
    dialect: 'openai',
    reply: reply.text('The first half of', {
      finishReason: 'length',
      usage: { inputTokens: 10, outputTokens: 100 },
    }),
  })
  const model = fakes.adapter(
    openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'gpt-4o' }),
  )
  const refused = await callModel({
    models: [model],
    request: { messages: [user('write a long essay')], maxTokens: 100 },
    limits: { admission: false, budget },
  }).then(
    () => undefined,
    (error: unknown) => error,
  )
  return { fake, refused }
}

describe('a max_tokens recovery step the cost budget cannot afford', () => {
  it('surfaces the cut answer already paid for (OutputTruncatedError, the refusal its cause), not the budget error alone', async () => {
    // Room for the first answer ($0.00101), not for the raised cap's estimate (~$0.002).
    const budget = new CostBudget({ limitUsd: 0.0025, prices })
    const { fake, refused } = await cutAnswerOn(budget)
    // Before: BudgetExceededError, and the answer the budget had paid for was gone.
    expect(isOutputTruncated(refused)).toBe(true)
    const truncated = refused as OutputTruncatedError
    expect(truncated.response.text).toBe('The first half of')
    expect(truncated.response.finishReason).toBe('length')
    expect(truncated.response.usage).toMatchObject({ inputTokens: 10, outputTokens: 100 })
    // The step the budget refused was not taken (nothing of it was sent).
    expect(truncated.recoveries).toEqual([])
    expect(isBudgetExceeded(truncated.cause)).toBe(true)
    expect(truncated.message).toMatch(/the next step was not run: cost budget exceeded/)
    expect(fake.requests).toHaveLength(1)
    expect(budget.spentUsd).toBeCloseTo(0.00101, 8)
    expect(budget.reservedUsd).toBe(0)
  })

  it('a budget that affords the raised cap but not the continuation after it: both parts counted, the steps taken named', async () => {
    // Each answer reports 100 output tokens ($0.00101): $0.00202 spent after
    // the raised cap's, and the continuation's estimate (~$0.002) no longer fits.
    const budget = new CostBudget({ limitUsd: 0.0035, prices })
    const { fake, refused } = await cutAnswerOn(budget)
    expect(isOutputTruncated(refused)).toBe(true)
    const truncated = refused as OutputTruncatedError
    expect(truncated.recoveries).toEqual(['raise-cap'])
    // The raised cap's answer replaced the first; both were billed.
    expect(truncated.response.text).toBe('The first half of')
    expect(truncated.response.usage.outputTokens).toBe(200)
    expect(isBudgetExceeded(truncated.cause)).toBe(true)
    expect(fake.requests).toHaveLength(2)
  })
})
