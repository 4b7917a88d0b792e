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
