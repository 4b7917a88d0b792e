import { describe, expect, it } from 'vitest'
import { CostBudget } from '../../src/budget/CostBudget.js'
import { estimatePromptTokens } from '../../src/budget/estimatePromptTokens.js'
import { BudgetExceededError, isBudgetExceeded } from '../../src/errors/BudgetExceededError.js'
import { isUnknownPrice } from '../../src/errors/UnknownPriceError.js'
import type { ChatRequest } from '../../src/types.js'

const prices = {
  'gpt-4o-mini': { inputPerMTok: 0.15, outputPerMTok: 0.6 },
  'claude-opus-4-6': { inputPerMTok: 15, outputPerMTok: 75 },
}

const request = (text: string, maxTokens = 1000): ChatRequest => ({
  messages: [{ role: 'user', content: text }],
  maxTokens,
})

describe('estimatePromptTokens', () => {
  it('counts ASCII at ceil(chars / 4) plus 4 tokens of framing per message', () => {
    expect(estimatePromptTokens(request('a'.repeat(400)))).toBe(100 + 4)
    expect(estimatePromptTokens(request('a'.repeat(401)))).toBe(101 + 4)
  })

  it('counts every non-ASCII code point as a whole token, so CJK text is not undercounted', () => {
    // 10 Chinese characters and one emoji (a surrogate pair is one code point).
    expect(estimatePromptTokens(request('你好世界你好世界你好😀'))).toBe(11 + 4)
  })

  it('counts tool calls, tool results, thinking and tool definitions as text', () => {
    const withBlocks: ChatRequest = {
      maxTokens: 1,
      messages: [
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'abcd', signature: 'sig-not-counted' },
            { type: 'tool_call', id: 't1', name: 'f', arguments: { a: 1 } },
          ],
        },
        { role: 'tool', content: [{ type: 'tool_result', toolCallId: 't1', content: 'abcd' }] },
      ],
      tools: [{ name: 'f', parameters: {} }],
    }
    const chars =
      'abcd'.length + 'f{"a":1}'.length + 'abcd'.length + JSON.stringify(withBlocks.tools).length
    expect(estimatePromptTokens(withBlocks)).toBe(Math.ceil(chars / 4) + 8)
  })

  it('counts the other fields sent (extra) as text: a response_format schema is billed as input', () => {
    const schema = { type: 'object', description: 'x'.repeat(400_000) }
    const extra = { response_format: { type: 'json_schema', json_schema: { name: 's', schema } } }
    const withSchema: ChatRequest = { ...request('hi'), extra }
    expect(estimatePromptTokens(withSchema)).toBe(
      Math.ceil(('hi'.length + JSON.stringify(extra).length) / 4) + 4,
    )
    // So the check before sending sees it: 100k tokens at $2.5 per million.
    const budget = new CostBudget({
      limitUsd: 0.01,
      prices: { 'gpt-4o': { inputPerMTok: 2.5, outputPerMTok: 10 } },
    })
    expect(() =>
      budget.reserve(budget.estimate('gpt-4o', { ...withSchema, maxTokens: 100 })),
    ).toThrow(BudgetExceededError)
  })
})

describe('CostBudget', () => {
  it('estimates the prompt at the input price plus the whole maxTokens at the output price', () => {
    const budget = new CostBudget({ limitUsd: 1, prices })
    const usd = budget.estimate('gpt-4o-mini', request('a'.repeat(3984), 4096))
    // (996 + 4) input tokens × $0.15/M + 4096 output tokens × $0.60/M
    expect(usd).toBeCloseTo((1000 * 0.15 + 4096 * 0.6) / 1e6, 12)
  })

  it('refuses an attempt whose estimate does not fit, before anything is sent, and says by how much', () => {
    const budget = new CostBudget({ limitUsd: 0.01, prices })
    budget.record('claude-opus-4-6', { inputTokens: 100, outputTokens: 100 }) // $0.009
    expect(budget.spentUsd).toBeCloseTo(0.009, 12)
    let sent = 0
    const attempt = () => {
      budget.assertCanSpend(budget.estimate('claude-opus-4-6', request('hello', 100)))
      sent++
    }
    expect(attempt).toThrow(BudgetExceededError)
    expect(sent).toBe(0)
    try {
      attempt()
    } catch (error) {
      expect(isBudgetExceeded(error)).toBe(true)
      expect(error).toMatchObject({ code: 'BUDGET_EXCEEDED', limitUsd: 0.01 })
      expect((error as BudgetExceededError).spentUsd).toBeCloseTo(0.009, 12)
      expect((error as BudgetExceededError).estimateUsd).toBeGreaterThan(0.001)
    }
  })

  it('allows spending up to the limit exactly and reports what is left', () => {
    const budget = new CostBudget({ limitUsd: 0.5, prices })
    expect(() => budget.assertCanSpend(0.5)).not.toThrow()
    const cost = budget.record('gpt-4o-mini', { inputTokens: 1_000_000, outputTokens: 0 })
    expect(cost).toBeCloseTo(0.15, 12)
    expect(budget.remainingUsd).toBeCloseTo(0.35, 12)
    expect(() => budget.assertCanSpend(0.35)).not.toThrow()
    expect(() => budget.assertCanSpend(0.36)).toThrow(BudgetExceededError)
    budget.record('gpt-4o-mini', { inputTokens: 0, outputTokens: 1_000_000 })
    expect(budget.remainingUsd).toBe(0)
  })

  it('with limitUsd 0 refuses any priced attempt', () => {
    const budget = new CostBudget({ limitUsd: 0, prices })
    expect(() => budget.assertCanSpend(budget.estimate('gpt-4o-mini', request('x', 1)))).toThrow(
      BudgetExceededError,
    )
  })

  it('throws a typed UnknownPriceError for a model missing from the price table', () => {
    const budget = new CostBudget({ limitUsd: 1, prices })
    expect(() => budget.estimate('gpt-4o-mni', request('x'))).toThrow(
      /no price for model "gpt-4o-mni"/,
    )
    try {
      budget.record('gpt-4o-mni', { inputTokens: 1, outputTokens: 1 })
      expect.unreachable()
    } catch (error) {
      expect(isUnknownPrice(error)).toBe(true)
      expect(error).toMatchObject({ code: 'UNKNOWN_PRICE', model: 'gpt-4o-mni' })
    }
    expect(() => budget.estimate('toString', request('x'))).toThrow(/no price/)
  })

  it('prices cached input at cachedInputPerMTok and reasoning as the output it is, each count once', () => {
    const budget = new CostBudget({
      limitUsd: 1,
      prices: {
        cached: { inputPerMTok: 1, outputPerMTok: 4, cachedInputPerMTok: 0.1 },
        plain: { inputPerMTok: 1, outputPerMTok: 4 },
      },
    })
    // 1000 input of which 800 read from the cache; 500 output of which 300 reasoning.
    const usage = {
      inputTokens: 1000,
      outputTokens: 500,
      cachedInputTokens: 800,
      reasoningTokens: 300,
    }
    // 200 × $1 + 800 × $0.1 + 500 × $4, per million.
    expect(budget.record('cached', usage)).toBeCloseTo(0.00228, 15)
    // No cache price: every input token at the input price.
    expect(budget.record('plain', usage)).toBeCloseTo(0.003, 15)
    // A cached count above the input (a provider's slip) is no more than the input.
    expect(budget.record('cached', { ...usage, cachedInputTokens: 5000 })).toBeCloseTo(0.0021, 15)
  })

  it('prices cache writes at cacheCreationInputPerMTok; without it at twice the input price, never under the bill', () => {
    const budget = new CostBudget({
      limitUsd: 1,
      prices: {
        // Anthropic's 5-minute writes: 1.25× the input price; reads 0.1×.
        fiveMinute: {
          inputPerMTok: 1,
          outputPerMTok: 4,
          cachedInputPerMTok: 0.1,
          cacheCreationInputPerMTok: 1.25,
        },
        unsaid: { inputPerMTok: 1, outputPerMTok: 4, cachedInputPerMTok: 0.1 },
      },
    })
    // 1000 input: 100 plain, 600 read from the cache, 300 written to it.
    const usage = {
      inputTokens: 1000,
      outputTokens: 0,
      cachedInputTokens: 600,
      cacheCreationInputTokens: 300,
    }
    // 100 × $1 + 600 × $0.1 + 300 × $1.25, per million.
    expect(budget.record('fiveMinute', usage)).toBeCloseTo(0.000535, 15)
    // Unsaid: the dearest write Anthropic bills (1-hour, 2×): 100 + 60 + 600.
    expect(budget.record('unsaid', usage)).toBeCloseTo(0.00076, 15)
    // Writes above what the reads leave of the input (a provider's slip) are no more than it.
    expect(budget.record('fiveMinute', { ...usage, cacheCreationInputTokens: 5000 })).toBeCloseTo(
      (600 * 0.1 + 400 * 1.25) / 1e6,
      15,
    )
    expect(
      () =>
        new CostBudget({
          limitUsd: 1,
          prices: { m: { inputPerMTok: 1, outputPerMTok: 1, cacheCreationInputPerMTok: -1 } },
        }),
    ).toThrow(/cacheCreationInputPerMTok must be a finite number >= 0/)
  })

  it('holds and charges a request past longContext.aboveInputTokens at the long-context price, all of it', () => {
    // Gemini 2.5 Pro: $1.25 / $10 per million up to 200K prompt tokens, $2.50 / $15 past them.
    const budget = new CostBudget({
      limitUsd: 10,
      prices: {
        pro: {
          inputPerMTok: 1.25,
          outputPerMTok: 10,
          longContext: { aboveInputTokens: 200_000, inputPerMTok: 2.5, outputPerMTok: 15 },
        },
      },
    })
    // 300K input, 1000 output: the bill is 300K × $2.50 + 1000 × $15 = $0.765
    // (before: $0.385, half of it, and the limit let twice its money through).
    expect(budget.record('pro', { inputTokens: 300_000, outputTokens: 1000 })).toBeCloseTo(
      0.765,
      12,
    )
    // At the threshold it is the short price.
    expect(budget.record('pro', { inputTokens: 200_000, outputTokens: 1000 })).toBeCloseTo(0.26, 12)
    // The check before sending: a prompt estimated past it is held at the long price.
    const long = request('a'.repeat(4 * 250_000), 1000)
    const prompt = estimatePromptTokens(long)
    expect(budget.estimate('pro', long)).toBeCloseTo((prompt * 2.5 + 1000 * 15) / 1e6, 12)
    expect(
      () =>
        new CostBudget({
          limitUsd: 1,
          prices: {
            m: {
              inputPerMTok: 1,
              outputPerMTok: 1,
              longContext: { inputPerMTok: 2, outputPerMTok: 2 },
            },
          },
        } as never),
    ).toThrow(/longContext.aboveInputTokens must be a whole number/)
  })

  it("past longContext, a cache price it leaves out is the model's scaled as its input price is", () => {
    // Gemini 2.5 Pro caches implicitly: reads $0.125 up to 200K, $0.25 past.
    // Taken as the long input price ($2.50), a mostly cached long prompt was
    // charged $0.765 where Google bills $0.1125.
    const budget = new CostBudget({
      limitUsd: 10,
      prices: {
        pro: {
          inputPerMTok: 1.25,
          outputPerMTok: 10,
          cachedInputPerMTok: 0.125,
          longContext: { aboveInputTokens: 200_000, inputPerMTok: 2.5, outputPerMTok: 15 },
        },
      },
    })
    // 10K × $2.50 + 290K × $0.25 + 1K × $15.
    expect(
      budget.record('pro', {
        inputTokens: 300_000,
        cachedInputTokens: 290_000,
        outputTokens: 1000,
      }),
    ).toBeCloseTo(0.1125, 12)
  })

  it('a 1-hour write is never priced below the other writes when no 1-hour price is set', () => {
    // A write price set above 2× input (a provider whose writes cost more):
    // the writes the usage says are 1-hour ones were charged 2× input.
    const budget = new CostBudget({
      limitUsd: 10,
      prices: { s: { inputPerMTok: 3, outputPerMTok: 15, cacheCreationInputPerMTok: 12 } },
    })
    expect(
      budget.record('s', {
        inputTokens: 10_000,
        outputTokens: 0,
        cacheCreationInputTokens: 10_000,
        cacheCreation1hInputTokens: 10_000,
      }),
    ).toBeCloseTo(0.12, 12)
  })

  it('adds uncappedReasoningTokens to maxTokens where the provider bills reasoning beyond the cap', () => {
    const budget = new CostBudget({
      limitUsd: 0.05,
      prices: { r1: { inputPerMTok: 0, outputPerMTok: 2, uncappedReasoningTokens: 32_000 } },
    })
    // (1000 + 32000) output tokens at $2 per million.
    expect(budget.estimate('r1', request('', 1000))).toBeCloseTo(0.066, 12)
    expect(budget.worstOutputTokens('r1', 1000)).toBe(33_000)
    expect(() => budget.reserve(budget.estimate('r1', request('', 1000)))).toThrow(
      BudgetExceededError,
    )
    expect(
      () =>
        new CostBudget({
          limitUsd: 1,
          prices: { m: { inputPerMTok: 1, outputPerMTok: 1, uncappedReasoningTokens: 1.5 } },
        }),
    ).toThrow(/uncappedReasoningTokens/)
  })

  it('counts unpriced models as free only when allowUnpriced is set', () => {
    const budget = new CostBudget({ limitUsd: 1, prices, allowUnpriced: true })
    expect(budget.estimate('local-llama', request('x'.repeat(100)))).toBe(0)
    expect(budget.record('local-llama', { inputTokens: 10, outputTokens: 10 })).toBe(0)
    expect(budget.spentUsd).toBe(0)
  })

  it('rejects nonsense limits, prices and estimates naming the field (RangeError for a number out of range)', () => {
    expect(() => new CostBudget({ limitUsd: -1, prices })).toThrow(RangeError)
    expect(() => new CostBudget({ limitUsd: Number.NaN, prices })).toThrow(/limitUsd/)
    expect(() => new CostBudget({ limitUsd: '5' as never, prices })).toThrow(
      new TypeError("CostBudget: limitUsd must be a number ≥ 0, got '5' (a string)"),
    )
    expect(
      () => new CostBudget({ limitUsd: 1, prices: { m: { inputPerMTok: -1, outputPerMTok: 1 } } }),
    ).toThrow(/prices\["m"\]/)
    expect(
      () =>
        new CostBudget({
          limitUsd: 1,
          prices,
          providerPrices: { p: { m: { inputPerMTok: 1, outputPerMTok: Number.NaN } } },
        }),
    ).toThrow(/providerPrices\["p"\]\["m"\]/)
    expect(() => new CostBudget({ limitUsd: 1, prices }).assertCanSpend(Number.NaN)).toThrow(
      RangeError,
    )
  })
})
