import { Deadline } from '@hourglass/core'
import { reply, startFakeProvider } from '@hourglass/testkit'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { CostBudget } from '../../src/budget/CostBudget.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'

let fake: Awaited<ReturnType<typeof startFakeProvider>>
beforeAll(async () => {
  fake = await startFakeProvider({ dialect: 'openai' })
})
afterAll(async () => {
  await fake.close()
})

describe('a stream consumer that edits the finish event', () => {
  it('changes neither result.usage nor what the attempt costs and the budget spends', async () => {
    const model = openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'fake-model' })
    const budget = new CostBudget({
      limitUsd: 1,
      prices: { 'fake-model': { inputPerMTok: 5, outputPerMTok: 25 } },
    })
    const records: AttemptRecord[] = []
    fake.enqueue(reply.text('a b c', { tokenDelayMs: 5 }))
    const stream = callModel({
      models: [model],
      request: { messages: [{ role: 'user', content: 'hi' }], maxTokens: 50, stream: true },
      deadline: Deadline.after(5000),
      limits: { budget, admission: false },
      retry: { budgets: false },
      onAttempt: (record) => records.push(record),
    })
    for await (const event of stream) {
      // A consumer keeping a running total in the first usage object it got.
      if (event.type === 'finish' && event.usage) event.usage.outputTokens += 1_000_000
    }
    const answer = await stream.result
    expect(answer.usage.outputTokens).toBeLessThan(100)
    expect(records).toHaveLength(1)
    expect(records[0]?.costUsd).toBeLessThan(0.01)
    expect(budget.spentUsd).toBeLessThan(0.01)
  })
})
