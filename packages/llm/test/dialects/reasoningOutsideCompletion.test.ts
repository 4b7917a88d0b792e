import { CostBudget, dialects, type StreamEvent } from '@hourglass/llm'
import { describe, expect, it } from 'vitest'

/**
 * xAI's Chat Completions counts reasoning apart from `completion_tokens`
 * (`total_tokens` = prompt + completion + reasoning), where OpenAI's
 * `completion_tokens` includes it. Read as OpenAI's, a Grok answer's
 * reasoning was no output at all: `usage.reasoningTokens` above
 * `usage.outputTokens`, and the budget charged none of it.
 */
const xaiUsage = {
  prompt_tokens: 10120,
  completion_tokens: 1499,
  total_tokens: 14428,
  prompt_tokens_details: { cached_tokens: 128 },
  completion_tokens_details: { reasoning_tokens: 2809 },
}
const whole = (usage: object) => ({
  id: 'chatcmpl-x',
  object: 'chat.completion',
  model: 'grok-4',
  choices: [{ index: 0, message: { role: 'assistant', content: 'Hi' }, finish_reason: 'stop' }],
  usage,
})

function streamed(usage: object): StreamEvent[] {
  const parser = dialects.openai.createStreamParser()
  const out: StreamEvent[] = []
  const frames = [
    {
      id: 'chatcmpl-x',
      choices: [{ index: 0, delta: { role: 'assistant', content: 'Hi' }, finish_reason: null }],
    },
    { id: 'chatcmpl-x', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] },
    { id: 'chatcmpl-x', choices: [], usage },
    '[DONE]',
  ]
  for (const frame of frames) {
    const data = typeof frame === 'string' ? frame : JSON.stringify(frame)
    out.push(...parser.parseStreamEvent({ event: undefined, data }))
  }
  out.push(...parser.end())
  return out
}

describe('reasoning counted outside completion_tokens (xAI)', () => {
  it('a whole answer’s output is its completion plus its reasoning', () => {
    const answer = dialects.openai.parseResponse(whole(xaiUsage))
    expect(answer.usage.outputTokens).toBe(1499 + 2809)
    expect(answer.usage.reasoningTokens).toBe(2809)
  })

  it('so is a streamed answer’s', () => {
    const finish = streamed(xaiUsage).find((e) => e.type === 'finish')
    expect(finish?.type === 'finish' && finish.usage?.outputTokens).toBe(1499 + 2809)
  })

  it('a reasoning count above the completion count is outside it too, with no total', () => {
    const { total_tokens: _t, ...noTotal } = { ...xaiUsage, completion_tokens: 1 }
    expect(dialects.openai.parseResponse(whole(noTotal)).usage.outputTokens).toBe(1 + 2809)
  })

  it('OpenAI’s own usage (reasoning inside completion_tokens) is read as before', () => {
    const openai = {
      prompt_tokens: 1200,
      completion_tokens: 300,
      total_tokens: 1500,
      completion_tokens_details: { reasoning_tokens: 192 },
    }
    expect(dialects.openai.parseResponse(whole(openai)).usage).toMatchObject({
      outputTokens: 300,
      reasoningTokens: 192,
    })
  })

  it('the budget charges the reasoning at the output price', () => {
    const budget = new CostBudget({
      limitUsd: 10,
      prices: { 'grok-4': { inputPerMTok: 1.25, cachedInputPerMTok: 0.2, outputPerMTok: 2.5 } },
    })
    const { usage } = dialects.openai.parseResponse(whole(xaiUsage))
    // The provider's bill for it: cost_in_usd_ticks 232856000 (1 USD = 1e10 ticks).
    expect(budget.record('grok-4', usage)).toBeCloseTo(0.0232856, 9)
  })
})
