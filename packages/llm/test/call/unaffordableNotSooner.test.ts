import { Deadline } from '@hourglass/core'
import { openAIErrors } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { Admission } from '../../src/admission/Admission.js'
import { CostBudget } from '../../src/budget/CostBudget.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import { useFakes, user } from './support/fakes.js'

// The earliest-answer rule compared a rate-limited model's short wait with a
// fallback the cost budget could not afford: that fallback, with no latency
// history, was "expected to answer at once", so the call left the primary at
// its first 429 (`retry-after-ms: 50`), the fallback was skipped for the
// budget, and the call failed with BudgetExceededError in milliseconds, its
// deadline of 10 s unused — the primary would have answered after its wait.
// A model the budget cannot afford is not expected to answer: it is left out
// of the comparison, before an attempt (admission's wait) and after one.

const fakes = useFakes()
const prices = {
  cheap: { inputPerMTok: 1, outputPerMTok: 1 },
  dear: { inputPerMTok: 1_000_000, outputPerMTok: 1_000_000 },
}
const request = { messages: [user('hi')], maxTokens: 100 }

async function setup() {
  const primary = await fakes.start()
  const dear = await fakes.start()
  const models = [
    fakes.adapter(openAICompatible({ baseURL: primary.baseURL, apiKey: 'sk', model: 'cheap' })),
    fakes.adapter(
      openAICompatible({ baseURL: dear.baseURL, apiKey: 'sk', model: 'dear', name: 'other' }),
    ),
  ]
  // $1: the cheap model's estimate fits many times, the dear one's ($105) never.
  const budget = new CostBudget({ limitUsd: 1, prices })
  return { primary, dear, models, budget }
}

describe('a fallback the cost budget cannot afford is not expected to answer sooner', () => {
  it.each([
    ['with admission', () => new Admission()],
    ['without admission', () => false as const],
  ])('a short rate limit on the primary is waited out (%s)', async (_, admission) => {
    const { primary, dear, models, budget } = await setup()
    primary.enqueue(openAIErrors.rateLimited({ retryAfterMs: 50 }))
    const records: AttemptRecord[] = []
    const answer = await callModel({
      models,
      request,
      deadline: Deadline.after(10_000),
      retry: { budgets: false },
      limits: { budget, admission: admission() },
      onAttempt: (r) => records.push(r),
    })
    expect(answer.model).toBe('cheap')
    expect(records.map((r) => [r.model, r.decision])).toEqual([
      ['cheap', 'retry'],
      ['cheap', 'success'],
    ])
    expect(records[0]?.reason).not.toMatch(/falling back/)
    expect(primary.requests).toHaveLength(2)
    expect(dear.requests).toHaveLength(0)
  })

  it('admission waits for a cooling primary instead of refusing it for an unaffordable fallback', async () => {
    const { primary, dear, models, budget } = await setup()
    const admission = new Admission()
    // Another call met the limit: the primary's key is cooling when this call
    // starts (for 500 ms: still cooling when read, on a loaded machine too).
    primary.enqueue(openAIErrors.rateLimited({ retryAfterMs: 500 }))
    await callModel({
      models: models.slice(0, 1),
      request,
      retry: { budgets: false, maxAttempts: 1 },
      limits: { admission },
    }).catch(() => {})
    expect(
      admission.forecast({
        provider: 'openai',
        endpoint: primary.baseURL,
        keys: ['sk'],
        model: 'cheap',
      }).waitMs,
    ).toBeGreaterThan(0)

    const records: AttemptRecord[] = []
    const answer = await callModel({
      models,
      request,
      deadline: Deadline.after(10_000),
      retry: { budgets: false },
      limits: { budget, admission },
      onAttempt: (r) => records.push(r),
    })
    expect(answer.model).toBe('cheap')
    expect(records.map((r) => [r.model, r.decision])).toEqual([['cheap', 'success']])
    expect(dear.requests).toHaveLength(0)
  })

  it('an affordable fallback is still preferred to the wait', async () => {
    const { primary, dear, models } = await setup()
    primary.enqueue(openAIErrors.rateLimited({ retryAfterMs: 5000 }))
    const answer = await callModel({
      models,
      request,
      deadline: Deadline.after(10_000),
      retry: { budgets: false },
      limits: { budget: new CostBudget({ limitUsd: 1000, prices }), admission: false },
    })
    expect(answer.model).toBe('dear')
    expect(primary.requests).toHaveLength(1)
    expect(dear.requests).toHaveLength(1)
  })
})
