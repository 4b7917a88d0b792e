import {
  type AttemptRecord,
  anthropic,
  CostBudget,
  callModel,
  gemini,
  type ModelAdapter,
  openAICompatible,
} from '@hourglass/llm'
import { faultServer } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'

/**
 * Usage is the provider's word, and a broken or hostile upstream can say
 * anything: 1e308 tokens, a JSON `1e400` (read as Infinity), a negative
 * count. Such counts are clamped to `Number.MAX_SAFE_INTEGER`, so that the
 * answer's usage, the attempt's `costUsd` and the budget's spend stay
 * finite — they were Infinity — and still over any limit. Summed counts
 * (Anthropic's input and cache counts, Gemini's output and thoughts) used to
 * overflow to Infinity and be read as 0 tokens.
 */
const MAX = Number.MAX_SAFE_INTEGER
const prices = { m: { inputPerMTok: 5, outputPerMTok: 25 } }
const request = { messages: [{ role: 'user' as const, content: 'hi' }], maxTokens: 10 }

const bodies = {
  openai: (usage: unknown) =>
    JSON.stringify({
      id: 'c1',
      object: 'chat.completion',
      choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }],
      usage,
    }),
  anthropic: (usage: unknown) =>
    JSON.stringify({
      id: 'msg_1',
      type: 'message',
      role: 'assistant',
      model: 'm',
      content: [{ type: 'text', text: 'hi' }],
      stop_reason: 'end_turn',
      usage,
    }),
  gemini: (usage: unknown) =>
    JSON.stringify({
      candidates: [{ content: { role: 'model', parts: [{ text: 'hi' }] }, finishReason: 'STOP' }],
      usageMetadata: usage,
    }),
}
type Dialect = keyof typeof bodies
const adapters: Record<Dialect, (baseURL: string) => ModelAdapter> = {
  openai: (baseURL) => openAICompatible({ baseURL, apiKey: 'k', model: 'm' }),
  anthropic: (baseURL) => anthropic({ baseURL, apiKey: 'k', model: 'm' }),
  gemini: (baseURL) => gemini({ baseURL, apiKey: 'k', model: 'm' }),
}

async function answer(dialect: Dialect, body: string) {
  const server = await faultServer({
    type: 'respond',
    status: 200,
    headers: { 'content-type': 'application/json' },
    body,
  })
  try {
    const budget = new CostBudget({ limitUsd: 100, prices })
    const records: AttemptRecord[] = []
    const response = await callModel({
      models: [adapters[dialect](server.url)],
      request,
      deadline: false,
      limits: { budget, admission: false },
      retry: { budgets: false },
      onAttempt: (record) => records.push(record),
    })
    return { response, budget, records }
  } finally {
    await server.close()
  }
}

const huge: Record<Dialect, string> = {
  openai: bodies.openai({
    prompt_tokens: 1e308,
    completion_tokens: 1e308,
    prompt_tokens_details: { cached_tokens: 1e308 },
    completion_tokens_details: { reasoning_tokens: 1e308 },
  }),
  anthropic: bodies.anthropic({
    input_tokens: 1e308,
    cache_creation_input_tokens: 1e308,
    cache_read_input_tokens: 1e308,
    output_tokens: 1e308,
  }),
  gemini: bodies.gemini({
    promptTokenCount: 1e308,
    candidatesTokenCount: 1e308,
    thoughtsTokenCount: 1e308,
    cachedContentTokenCount: 1e308,
  }),
}

describe('a provider reporting absurd token counts', () => {
  for (const dialect of ['openai', 'anthropic', 'gemini'] as const) {
    it(`${dialect}: 1e308 tokens are clamped, and the charge is finite and over the limit`, async () => {
      const { response, budget, records } = await answer(dialect, huge[dialect])
      expect(response.usage.inputTokens).toBe(MAX)
      expect(response.usage.outputTokens).toBe(MAX)
      expect(response.usage.cachedInputTokens).toBe(MAX)
      expect(response.usageReported).toBeUndefined()
      expect(Number.isFinite(budget.spentUsd)).toBe(true)
      expect(budget.spentUsd).toBeGreaterThan(budget.limitUsd)
      expect(records).toHaveLength(1)
      expect(Number.isFinite(records[0]!.costUsd)).toBe(true)
      expect(() => budget.assertCanSpend(0)).toThrow(
        expect.objectContaining({ code: 'BUDGET_EXCEEDED' }),
      )
    })
  }

  it('a JSON number past the double range (read as Infinity) is clamped, not dropped', async () => {
    const body = bodies
      .openai({ prompt_tokens: 1, completion_tokens: 2 })
      .replace('"prompt_tokens":1', '"prompt_tokens":1e400')
    const { response, budget } = await answer('openai', body)
    expect(response.usage.inputTokens).toBe(MAX)
    expect(Number.isFinite(budget.spentUsd)).toBe(true)
  })

  it('gemini: a negative candidates count takes nothing off the thoughts', async () => {
    const { response } = await answer(
      'gemini',
      bodies.gemini({ promptTokenCount: 5, candidatesTokenCount: -100, thoughtsTokenCount: 50 }),
    )
    expect(response.usage).toEqual({ inputTokens: 5, outputTokens: 50, reasoningTokens: 50 })
  })
})

describe('CostBudget charges stay finite', () => {
  it('at the dearest price, recorded again and again', () => {
    const budget = new CostBudget({
      limitUsd: 1,
      prices: { m: { inputPerMTok: Number.MAX_VALUE, outputPerMTok: Number.MAX_VALUE } },
    })
    for (let i = 0; i < 3; i++) {
      const usd = budget.record('m', { inputTokens: 1e308, outputTokens: Number.POSITIVE_INFINITY })
      expect(Number.isFinite(usd)).toBe(true)
    }
    expect(Number.isFinite(budget.spentUsd)).toBe(true)
    expect(budget.remainingUsd).toBe(0)
    expect(() => budget.assertCanSpend(0)).toThrow(
      expect.objectContaining({ code: 'BUDGET_EXCEEDED' }),
    )
  })

  it('a price whose default cache-write price overflows charges no NaN', () => {
    // The cache-write price defaults to 2× the input price: Infinity here,
    // and 0 cache-write tokens × Infinity was NaN — a spend that never trips.
    const budget = new CostBudget({
      limitUsd: 1,
      prices: { m: { inputPerMTok: 1e308, outputPerMTok: 1 } },
    })
    budget.record('m', { inputTokens: 0, outputTokens: 1_000_000 })
    expect(budget.spentUsd).toBe(1)
  })
})
