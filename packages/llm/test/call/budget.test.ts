import { reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { CostBudget } from '../../src/budget/CostBudget.js'
import { callModel } from '../../src/call/callModel.js'
import { isBudgetExceeded } from '../../src/errors/BudgetExceededError.js'
import { useFakes, user } from './support/fakes.js'

const fakes = useFakes()
const prices = { 'gpt-4o-mini': { inputPerMTok: 0.15, outputPerMTok: 0.6 } }

describe('the cost budget', () => {
  it('stops an attempt before it is sent: the provider sees no request', async () => {
    const fake = await fakes.start({ dialect: 'openai' })
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'gpt-4o-mini' }),
    )
    // 100 000 output tokens at $0.60/M is $0.06: more than the $0.01 allowed.
    const budget = new CostBudget({ limitUsd: 0.01, prices })
    const error = await callModel({
      models: [model],
      request: { messages: [user('Write a novel.')], maxTokens: 100_000 },
      limits: { budget },
    }).catch((e: unknown) => e)
    expect(isBudgetExceeded(error)).toBe(true)
    expect(String((error as Error).message)).toMatch(/not sent/)
    expect(fake.requests).toHaveLength(0)
  })

  it('records what each answer cost from its usage, and refuses the attempt that would cross the limit', async () => {
    const fake = await fakes.start({
      dialect: 'openai',
      reply: reply.text('fine', { usage: { inputTokens: 1000, outputTokens: 1000 } }),
    })
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'gpt-4o-mini' }),
    )
    // Each answer costs 1000 × 0.15/M + 1000 × 0.6/M = $0.00075; the estimate for the next one fits twice.
    const budget = new CostBudget({ limitUsd: 0.002, prices })
    const request = { messages: [user('Hi')], maxTokens: 1000 }
    const costs: number[] = []
    await callModel({
      models: [model],
      request,
      onAttempt: (r) => costs.push(r.costUsd),
      limits: { budget },
    })
    await callModel({ models: [model], request, limits: { budget } })
    expect(budget.spentUsd).toBeCloseTo(0.0015, 10)
    expect(costs).toEqual([0.00075])
    const error = await callModel({ models: [model], request, limits: { budget } }).catch(
      (e: unknown) => e,
    )
    expect(isBudgetExceeded(error)).toBe(true)
    expect(fake.requests).toHaveLength(2)
  })

  it('an attempt that brings the spend exactly to the limit is sent: binary rounding does not refuse it', async () => {
    const fake = await fakes.start({
      dialect: 'openai',
      reply: reply.text('fine', { usage: { inputTokens: 0, outputTokens: 1 } }),
    })
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'dear' }),
    )
    // $0.10 per output token, prompts free: the first answer costs $0.10, the
    // second may cost $0.20 — $0.30 in all, the limit (0.1 + 0.2 is
    // 0.30000000000000004 in binary).
    const budget = new CostBudget({
      limitUsd: 0.3,
      prices: { dear: { inputPerMTok: 0, outputPerMTok: 100_000 } },
    })
    await callModel({
      models: [model],
      request: { messages: [user('Hi')], maxTokens: 1 },
      limits: { budget },
    })
    expect(budget.spentUsd).toBe(0.1)
    const answer = await callModel({
      models: [model],
      request: { messages: [user('Hi')], maxTokens: 2 },
      limits: { budget },
    })
    expect(answer.text).toBe('fine')
    expect(fake.requests).toHaveLength(2)
    // One token more does not fit.
    const error = await callModel({
      models: [model],
      request: { messages: [user('Hi')], maxTokens: 2 },
      limits: { budget },
    }).catch((e: unknown) => e)
    expect(isBudgetExceeded(error)).toBe(true)
    expect(fake.requests).toHaveLength(2)
  })
})

// The cost budget is a policy's limit like the others: a model it cannot
// afford is skipped (nothing sent to it) and the next model of the list is
// tried, as a model admission refuses is. It used to end the whole call with
// BudgetExceededError at the first unaffordable model, its cheap fallback
// never asked.
describe('a model the cost budget cannot afford', () => {
  // No input price: an attempt's worst case is its 100 output tokens.
  const dearPrices = {
    big: { inputPerMTok: 0, outputPerMTok: 1_050_000 }, // $105 for 100 tokens
    small: { inputPerMTok: 0, outputPerMTok: 100_000 }, // $10
    bigger: { inputPerMTok: 0, outputPerMTok: 2_000_000 }, // $200
  }
  const request = { messages: [user('Summarise the report.')], maxTokens: 100 }
  const start = async (model: string) => {
    const fake = await fakes.start({
      dialect: 'openai',
      reply: reply.text(`from ${model}`, { usage: { inputTokens: 10, outputTokens: 20 } }),
    })
    return { fake, adapter: fakes.adapterFor('openai', fake.baseURL, model) }
  }

  it('is skipped, with nothing sent to it: the next model that fits answers', async () => {
    const big = await start('big')
    const small = await start('small')
    const budget = new CostBudget({ limitUsd: 50, prices: dearPrices })
    const records: Array<{ model: string; decision: string; choice?: string | undefined }> = []
    const answer = await callModel({
      models: [big.adapter, small.adapter],
      request,
      limits: { budget, admission: false },
      onAttempt: (r) => records.push({ model: r.model, decision: r.decision, choice: r.choice }),
    })
    expect(answer.text).toBe('from small')
    expect(big.fake.requests).toHaveLength(0)
    expect(small.fake.requests).toHaveLength(1)
    // 20 output tokens at $0.10 each.
    expect(budget.spentUsd).toBeCloseTo(2, 10)
    expect(budget.reservedUsd).toBe(0)
    // The attempt that went says why it went there.
    expect(records).toHaveLength(1)
    expect(records[0]?.model).toBe('small')
    expect(records[0]?.choice).toMatch(/fallback from big.*cost budget.*\$105.*\$50/)
  })

  it('only when no model fits does the call fail with BudgetExceededError, naming every model skipped; nothing sent', async () => {
    const big = await start('big')
    const bigger = await start('bigger')
    const budget = new CostBudget({ limitUsd: 50, prices: dearPrices })
    const error = await callModel({
      models: [big.adapter, bigger.adapter],
      request,
      limits: { budget, admission: false },
    }).catch((e: unknown) => e)
    expect(isBudgetExceeded(error)).toBe(true)
    const message = String((error as Error).message)
    expect(message).toMatch(/openai\/big: .*\$105/)
    expect(message).toMatch(/openai\/bigger: .*\$200/)
    expect((error as { causes: Array<{ model: string }> }).causes.map((c) => c.model)).toEqual([
      'big',
      'bigger',
    ])
    expect(big.fake.requests).toHaveLength(0)
    expect(bigger.fake.requests).toHaveLength(0)
  })

  it('a model tried and failed, then a fallback that does not fit: BudgetExceededError, the failure among its causes', async () => {
    const failing = await fakes.start({
      dialect: 'openai',
      reply: reply.error(500, { error: { message: 'boom', type: 'server_error' } }),
    })
    const small = fakes.adapterFor('openai', failing.baseURL, 'small')
    const big = await start('big')
    const budget = new CostBudget({ limitUsd: 50, prices: dearPrices })
    const error = await callModel({
      models: [small, big.adapter],
      request,
      retry: { maxAttempts: 1 },
      limits: { budget, admission: false },
    }).catch((e: unknown) => e)
    expect(isBudgetExceeded(error)).toBe(true)
    const causes = (error as { causes: Array<{ model: string; attempts: number }> }).causes
    expect(causes.map((c) => [c.model, c.attempts])).toEqual([
      ['small', 1],
      ['big', 0],
    ])
    expect(failing.requests).toHaveLength(1)
    expect(big.fake.requests).toHaveLength(0)
  })
})
