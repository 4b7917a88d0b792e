import { Deadline } from '@hourglass/core'
import { reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { CostBudget } from '../../src/budget/CostBudget.js'
import { callModel } from '../../src/call/callModel.js'
import { isBudgetExceeded } from '../../src/errors/BudgetExceededError.js'
import { useFakes, user } from '../call/support/fakes.js'

const fakes = useFakes()
// $1 per output token, prompts free: a call with maxTokens 1 is estimated at $1.
const prices = { dear: { inputPerMTok: 0, outputPerMTok: 1_000_000 } }
const request = { messages: [user('Hi')], maxTokens: 1 }

/** A promise and its resolve. */
function gate(): { opened: Promise<void>; open: () => void } {
  let open!: () => void
  const opened = new Promise<void>((resolve) => {
    open = resolve
  })
  return { opened, open }
}

describe('a cost budget shared by calls in flight at once', () => {
  it('holds each attempt’s estimate until its cost is recorded: ten calls on a budget for two send two, not ten', async () => {
    const held = gate()
    const fake = await fakes.start({
      dialect: 'openai',
      // Every answer waits until all ten calls have been sent or refused.
      reply: async () => {
        await held.opened
        return reply.text('ok', { usage: { inputTokens: 0, outputTokens: 1 } })
      },
    })
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'dear' }),
    )
    const budget = new CostBudget({ limitUsd: 2, prices })
    const calls = Array.from({ length: 10 }, () =>
      callModel({ models: [model], request, limits: { budget } }).then(
        () => 'answered',
        (e: unknown) => e,
      ),
    )
    await fake.waitForRequests(2)
    // The eight others were refused before anything was sent: the two in
    // flight hold $2, the whole limit.
    expect(budget.reservedUsd).toBe(2)
    held.open()
    const outcomes = await Promise.all(calls)
    expect(outcomes.filter((o) => o === 'answered')).toHaveLength(2)
    const refused = outcomes.filter(isBudgetExceeded)
    expect(refused).toHaveLength(8)
    expect(refused[0]!.reservedUsd).toBe(2)
    expect(refused[0]!.message).toContain('$2 held by attempts in flight')
    expect(fake.requests).toHaveLength(2)
    expect(budget.spentUsd).toBe(2)
    expect(budget.reservedUsd).toBe(0)
  })

  it('gives the hold back on every way an attempt ends: refused by the provider, cut by the caller, ended by the deadline while it waited', async () => {
    const fake = await fakes.start({ dialect: 'openai' })
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'dear' }),
    )
    const budget = new CostBudget({ limitUsd: 1, prices })

    // A 400: not billed, never retried.
    fake.enqueue(reply.error(400, { error: { message: 'bad', type: 'invalid_request_error' } }))
    await callModel({ models: [model], request, limits: { budget } }).catch(() => {})
    expect(budget.reservedUsd).toBe(0)

    // The caller's signal, while the provider has not answered.
    fake.enqueue(reply.hang())
    const controller = new AbortController()
    const cut = callModel({
      models: [model],
      request,
      signal: controller.signal,
      limits: { budget },
    }).catch(() => 'cut')
    await fake.waitForRequests(2)
    expect(budget.reservedUsd).toBe(1)
    controller.abort()
    expect(await cut).toBe('cut')
    expect(budget.reservedUsd).toBe(0)

    // A 429 asking for 1 s: admission cools the key, and the retry's
    // attempt (its estimate held) waits for the cooldown until the 200 ms
    // deadline ends it.
    fake.enqueue(
      reply.error(
        429,
        { error: { message: 'slow down', type: 'requests', code: 'rate_limit_exceeded' } },
        { 'retry-after': '1' },
      ),
    )
    const deadline = Deadline.after(200)
    await callModel({ models: [model], request, deadline, limits: { budget } }).catch(() => {})
    deadline.dispose()
    expect(budget.reservedUsd).toBe(0)

    // Nothing was billed: the whole limit is still there for one more call
    // (on another key: the 429 cooled the first one for a second).
    expect(budget.spentUsd).toBe(0)
    fake.enqueue(reply.text('ok', { usage: { inputTokens: 0, outputTokens: 1 } }))
    const otherKey = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-2', model: 'dear' }),
    )
    await callModel({ models: [otherKey], request, limits: { budget } })
    expect(budget.spentUsd).toBe(1)
    expect(budget.reservedUsd).toBe(0)
  })

  it('reserve() checks like assertCanSpend, holds until released, and releases once', () => {
    const budget = new CostBudget({ limitUsd: 0.3, prices })
    const first = budget.reserve(0.1)
    const second = budget.reserve(0.2)
    expect(budget.reservedUsd).toBeCloseTo(0.3, 12)
    expect(() => budget.assertCanSpend(0.01)).toThrow(/held by attempts in flight/)
    first.release()
    first.release()
    expect(budget.reservedUsd).toBeCloseTo(0.2, 12)
    budget.assertCanSpend(0.1)
    second.release()
    // Exactly 0 again, float crumbs and all.
    expect(budget.reservedUsd).toBe(0)
    expect(() => budget.reserve(Number.NaN)).toThrow(/an estimate/)
    expect(budget.reservedUsd).toBe(0)
  })
})

describe('a model two providers price differently (providerPrices)', () => {
  it('checks and charges each attempt at its own provider’s price, not at a price of the same model name elsewhere', async () => {
    // Two providers serve "gpt-4o": the dear one bills $2 / $8 per million,
    // a reseller $0.1 / $0.1. Keyed by model name alone, one price served both.
    const dearFake = await fakes.start({
      dialect: 'openai',
      reply: () => reply.text('ok', { usage: { inputTokens: 1000, outputTokens: 1000 } }),
    })
    const cheapFake = await fakes.start({
      dialect: 'openai',
      reply: () => reply.text('ok', { usage: { inputTokens: 1000, outputTokens: 1000 } }),
    })
    const at = (name: string, baseURL: string) =>
      fakes.adapter(openAICompatible({ name, baseURL, apiKey: 'sk', model: 'gpt-4o' }))
    const dear = at('dear', dearFake.baseURL)
    const cheap = at('cheap', cheapFake.baseURL)
    const providerPrices = {
      dear: { 'gpt-4o': { inputPerMTok: 2, outputPerMTok: 8 } },
      cheap: { 'gpt-4o': { inputPerMTok: 0.1, outputPerMTok: 0.1 } },
    }
    const ask = { messages: [user('Hi')], maxTokens: 1000 }
    const budget = new CostBudget({ limitUsd: 1, prices: {}, providerPrices })
    await callModel({ models: [dear], request: ask, limits: { budget } })
    // 1000 × $2 + 1000 × $8 per million.
    expect(budget.spentUsd).toBeCloseTo(0.01, 12)
    await callModel({ models: [cheap], request: ask, limits: { budget } })
    expect(budget.spentUsd).toBeCloseTo(0.0102, 12)
    // The check before sending uses the provider's price too: $0.005 holds
    // the cheap provider's worst case ($0.0001…), not the dear one's ($0.008…).
    const tight = new CostBudget({ limitUsd: 0.005, prices: {}, providerPrices })
    await expect(
      callModel({ models: [dear], request: ask, limits: { budget: tight } }),
    ).rejects.toMatchObject({ code: 'BUDGET_EXCEEDED' })
    await callModel({ models: [cheap], request: ask, limits: { budget: tight } })
    expect(dearFake.requests).toHaveLength(1)
    expect(cheapFake.requests).toHaveLength(2)
    expect(tight.reservedUsd).toBe(0)
  })
})

describe('a model of the list missing from the price table', () => {
  it('is refused before anything is sent, not after the primary was tried and billed', async () => {
    const primary = await fakes.start({
      dialect: 'openai',
      reply: () => reply.error(500, { error: { message: 'down' } }),
    })
    const models = [
      fakes.adapter(openAICompatible({ baseURL: primary.baseURL, apiKey: 'sk', model: 'dear' })),
      // A typo: no such price.
      fakes.adapter(openAICompatible({ baseURL: primary.baseURL, apiKey: 'sk', model: 'deer' })),
    ]
    const budget = new CostBudget({ limitUsd: 10, prices })
    const error = await callModel({
      models,
      request,
      limits: { budget },
      retry: { maxAttempts: 1 },
    }).catch((e: unknown) => e)
    expect(error).toMatchObject({ code: 'UNKNOWN_PRICE', model: 'deer' })
    expect(primary.requests).toHaveLength(0)
    expect(budget.reservedUsd).toBe(0)
  })
})
