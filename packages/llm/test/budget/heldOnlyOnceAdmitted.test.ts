import { openAIErrors, reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { Admission } from '../../src/admission/Admission.js'
import { CostBudget } from '../../src/budget/CostBudget.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import { isBudgetExceeded } from '../../src/errors/BudgetExceededError.js'
import { useFakes, user } from '../call/support/fakes.js'
import { WaitClock } from '../support/waitClock.js'

const fakes = useFakes()
// $1 per output token, prompts free: a call with maxTokens 1 is estimated at $1.
const prices = {
  a: { inputPerMTok: 0, outputPerMTok: 1_000_000 },
  b: { inputPerMTok: 0, outputPerMTok: 1_000_000 },
}
const request = { messages: [user('Hi')], maxTokens: 1 }

/** Resolves once something waits on `clock` (a call held in admission's line). */
function waiting(clock: WaitClock): Promise<void> {
  return new Promise((resolve) => {
    const off = clock.onChange(() => {
      if (clock.pendingWaits > 0) {
        off()
        resolve()
      }
    })
  })
}

/** Model `a` cooling for 3 s on `admission` after a 429, and model `b` healthy. */
async function setUp() {
  const clock = new WaitClock()
  const admission = new Admission({ clock, staggerMs: 0 })
  const fakeA = await fakes.start({
    dialect: 'openai',
    reply: reply.text('from a', { usage: { inputTokens: 1, outputTokens: 1 } }),
  })
  const fakeB = await fakes.start({
    dialect: 'openai',
    reply: reply.text('from b', { usage: { inputTokens: 1, outputTokens: 1 } }),
  })
  const a = fakes.adapter(openAICompatible({ baseURL: fakeA.baseURL, apiKey: 'sk-a', model: 'a' }))
  const b = fakes.adapter(
    openAICompatible({ baseURL: fakeB.baseURL, apiKey: 'sk-b', model: 'b', name: 'other' }),
  )
  fakeA.enqueue(openAIErrors.rateLimited({ retryAfterS: 3 }))
  await callModel({ models: [a], request, retry: { maxAttempts: 1 }, limits: { admission } }).catch(
    () => {},
  )
  expect(fakeA.requests).toHaveLength(1)
  return { clock, admission, fakeA, fakeB, a, b }
}

describe('a call waiting in admission’s line holds none of the cost budget', () => {
  it('a call to a healthy provider is not refused for the estimate of a call that is only queued', async () => {
    const { clock, admission, fakeA, fakeB, a, b } = await setUp()
    const budget = new CostBudget({ limitUsd: 1.5, prices })
    const queued = waiting(clock)
    const first = callModel({ models: [a], request, limits: { admission, budget } })
    await queued
    // Nothing sent by the queued call, so nothing held.
    expect(budget.reservedUsd).toBe(0)
    const other = await callModel({ models: [b], request, limits: { admission, budget } })
    expect(other.text).toBe('from b')
    expect(fakeB.requests).toHaveLength(1)
    // The cooldown ends: the queued call is admitted, but $1 of the $1.5 is
    // spent, so its $1 estimate no longer fits: refused, nothing sent.
    clock.advance(3000)
    const refused = await first.catch((e: unknown) => e)
    expect(isBudgetExceeded(refused)).toBe(true)
    expect(fakeA.requests).toHaveLength(1)
    expect(budget.spentUsd).toBe(1)
    expect(budget.reservedUsd).toBe(0)
  })

  it('a call admitted after its wait is held from then on, and answered when it fits', async () => {
    const { clock, admission, fakeA, a } = await setUp()
    const budget = new CostBudget({ limitUsd: 1.5, prices })
    const records: AttemptRecord[] = []
    const queued = waiting(clock)
    const first = callModel({
      models: [a],
      request,
      limits: { admission, budget },
      onAttempt: (r) => records.push(r),
    })
    await queued
    clock.advance(3000)
    expect((await first).text).toBe('from a')
    expect(fakeA.requests).toHaveLength(2)
    expect(records.map((r) => r.decision)).toEqual(['success'])
    expect(budget.spentUsd).toBe(1)
    expect(budget.reservedUsd).toBe(0)
  })

  it('a call the budget cannot afford does not wait in the line at all', async () => {
    const { clock, admission, fakeA, a } = await setUp()
    const budget = new CostBudget({ limitUsd: 0.5, prices })
    const refused = await callModel({ models: [a], request, limits: { admission, budget } }).catch(
      (e: unknown) => e,
    )
    expect(isBudgetExceeded(refused)).toBe(true)
    expect(clock.pendingWaits).toBe(0)
    expect(clock.now()).toBe(0)
    expect(fakeA.requests).toHaveLength(1)
  })
})
