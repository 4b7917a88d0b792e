import { CostBudget, callModel, openAICompatible } from '@hourglass/llm'
import { faultServer } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { chargeBilledFailure } from '../../src/budget/billedFailure.js'
import { chargeAnswer } from '../../src/budget/chargeAnswer.js'
import { estimatePromptTokens } from '../../src/budget/estimatePromptTokens.js'

// An answer whose provider reported no usage is charged by estimate: the
// prompt's, plus `ceil(characters / 4)` of the output it delivered. That
// count is a guess — a token can be many characters (a run of spaces, a
// repeated string, a long number in tool arguments) — and it had no cap: an
// answer of 40,000 characters to a request capped at 100 tokens was charged
// 10,000 output tokens, a hundred times what the provider can bill, and far
// past what the call held for it before sending (`estimate`: the prompt
// plus `maxTokens`).
const prices = { m: { inputPerMTok: 1e6, outputPerMTok: 1e6 } } // $1 a token: a charge reads as tokens
const request = { messages: [{ role: 'user' as const, content: 'write' }], maxTokens: 100 }
const prompt = estimatePromptTokens(request)
const long = ' '.repeat(40_000)

describe('the output estimate of an answer without usage', () => {
  it('is capped at the request’s maxTokens', () => {
    const budget = new CostBudget({ limitUsd: 1e9, prices })
    const usd = chargeAnswer(budget, 'm', request, {
      usage: { inputTokens: 0, outputTokens: 0 },
      usageReported: false,
      content: [{ type: 'text', text: long }],
    })
    expect(usd).toBe(prompt + 100)
    // Never more than the call held for it before sending.
    expect(usd).toBeLessThanOrEqual(budget.estimate('m', request))
  })

  it('plus the reasoning a price says the provider bills beyond it', () => {
    const budget = new CostBudget({
      limitUsd: 1e9,
      prices: { m: { ...prices.m, uncappedReasoningTokens: 50 } },
    })
    const usd = chargeAnswer(budget, 'm', request, {
      usage: { inputTokens: 0, outputTokens: 0 },
      usageReported: false,
      content: [{ type: 'text', text: long }],
    })
    expect(usd).toBe(prompt + 150)
  })

  it('a short answer is still charged what it delivered', () => {
    const budget = new CostBudget({ limitUsd: 1e9, prices })
    const usd = chargeAnswer(budget, 'm', request, {
      usage: { inputTokens: 0, outputTokens: 0 },
      usageReported: false,
      content: [{ type: 'text', text: 'x'.repeat(40) }],
    })
    expect(usd).toBe(prompt + 10)
  })

  it('a stream cut before its usage is capped the same way', () => {
    const budget = new CostBudget({ limitUsd: 1e9, prices })
    const usd = chargeBilledFailure(budget, 'm', request, {
      kind: 'cut',
      outputWeight: long.length,
      usage: undefined,
    })
    expect(usd).toBe(prompt + 100)
  })

  it('through callModel: a whole answer without usage', async () => {
    const server = await faultServer({
      type: 'respond',
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        id: 'c1',
        object: 'chat.completion',
        choices: [
          { index: 0, message: { role: 'assistant', content: long }, finish_reason: 'stop' },
        ],
      }),
    })
    try {
      const budget = new CostBudget({ limitUsd: 1e9, prices })
      const model = openAICompatible({ baseURL: server.url, apiKey: 'sk-test', model: 'm' })
      try {
        await callModel({ models: [model], request, limits: { admission: false, budget } })
      } finally {
        await model.close()
      }
      expect(budget.spentUsd).toBe(prompt + 100)
    } finally {
      await server.close()
    }
  })
})
