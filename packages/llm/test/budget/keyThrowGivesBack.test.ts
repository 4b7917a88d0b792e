import { describe, expect, it } from 'vitest'
import type { ModelAdapter } from '../../src/adapters/ModelAdapter.js'
import { CostBudget } from '../../src/budget/CostBudget.js'
import { callModel } from '../../src/call/callModel.js'
import type { ChatResponse } from '../../src/types.js'

// The estimate is held from `reserve` on; every exit of the attempt gave it
// back, but for an adapter's `nextKey` (a custom adapter's key vault, read
// after the hold was taken) that threw: the call rejected with its error and
// the hold stayed for ever — every later call on the budget was checked
// against money no attempt was spending, until the budget refused them all.

const prices = { m: { inputPerMTok: 0, outputPerMTok: 1_000_000 } }
const request = { messages: [{ role: 'user' as const, content: 'Hi' }], maxTokens: 1 }

const answer: ChatResponse = {
  id: 'r',
  model: 'm',
  provider: 'vault',
  content: [{ type: 'text', text: 'ok' }],
  text: 'ok',
  finishReason: 'stop',
  usage: { inputTokens: 0, outputTokens: 1 },
}

function vaultAdapter(vault: () => string): ModelAdapter {
  return {
    name: 'vault',
    model: 'm',
    dialect: { wire: 'custom' } as unknown as ModelAdapter['dialect'],
    apiKeys: ['sk'],
    nextKey: vault,
    send: async () => ({ ok: true, status: 200, response: answer }),
    open: async () => {
      throw new Error('not streamed')
    },
  } as unknown as ModelAdapter
}

describe('a cost budget when the adapter’s key cannot be read', () => {
  it('gives the hold back: the next call fits', async () => {
    const budget = new CostBudget({ limitUsd: 1, prices })
    let locked = true
    const model = vaultAdapter(() => {
      if (locked) throw new Error('vault sealed')
      return 'sk'
    })
    await expect(
      callModel({ models: [model], request, limits: { budget, admission: false } }),
    ).rejects.toThrow('vault sealed')
    expect(budget.reservedUsd).toBe(0)
    locked = false
    const response = await callModel({
      models: [model],
      request,
      limits: { budget, admission: false },
    })
    expect(response.text).toBe('ok')
    expect(budget.spentUsd).toBe(1)
    expect(budget.reservedUsd).toBe(0)
  })
})
