import { CostBudget, callModel, openAICompatible } from '@hourglass/llm'
import { type FaultServer, faultServer } from '@hourglass/testkit'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

// An OpenAI-compatible server that reports no usage (it ignores
// `stream_options.include_usage`, or a proxy strips `usage`): the answer was
// generated and paid for all the same.
const text = 'word '.repeat(400) // 2,000 characters: ceil(2000 / 4) = 500 output tokens
const sse =
  [
    {
      id: 'c1',
      object: 'chat.completion.chunk',
      choices: [{ index: 0, delta: { role: 'assistant', content: text } }],
    },
    {
      id: 'c1',
      object: 'chat.completion.chunk',
      choices: [{ index: 0, delta: {}, finish_reason: 'stop' }],
    },
  ]
    .map((c) => `data: ${JSON.stringify(c)}\n\n`)
    .join('') + 'data: [DONE]\n\n'
const json = JSON.stringify({
  id: 'c1',
  object: 'chat.completion',
  choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }],
})
// $1 per token in and out: the charge reads as tokens.
const prices = { m1: { inputPerMTok: 1e6, outputPerMTok: 1e6 } }
const request = { messages: [{ role: 'user' as const, content: 'write' }], maxTokens: 1000 }

describe('an answer whose provider reported no usage', () => {
  let whole: FaultServer
  let streamed: FaultServer
  beforeAll(async () => {
    whole = await faultServer({
      type: 'respond',
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: json,
    })
    streamed = await faultServer({
      type: 'respond',
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      body: sse,
    })
  })
  afterAll(async () => {
    await whole.close()
    await streamed.close()
  })

  it.each([
    ['whole', false],
    ['streamed', true],
  ])(
    '%s: is charged the prompt estimate plus the output it delivered, not $0',
    async (_name, stream) => {
      const budget = new CostBudget({ limitUsd: 1e9, prices })
      const model = openAICompatible({
        baseURL: (stream ? streamed : whole).url,
        apiKey: 'sk-test-aaaaaaaa',
        model: 'm1',
      })
      const costs: number[] = []
      const call = callModel({
        models: [model],
        request: { ...request, stream },
        limits: { admission: false, budget },
        onAttempt: (r) => costs.push(r.costUsd),
      })
      const answer = stream
        ? await (call as unknown as { result: Promise<{ text: string }> }).result
        : await call
      expect((answer as { text: string }).text).toBe(text)
      // The prompt's estimate (a few tokens) plus 500 output tokens.
      expect(budget.spentUsd).toBeGreaterThan(500)
      expect(budget.spentUsd).toBeLessThan(520)
      expect(costs).toEqual([budget.spentUsd])
    },
  )

  it('trips the budget: the next call is refused with nothing sent', async () => {
    // `maxTokens: 10`: the answer's 500 tokens by characters are charged as
    // the 10 its request lets the provider bill (and the call held), plus the
    // prompt's 6 — 16 spent, so a second call's 16 does not fit in 20.
    const budget = new CostBudget({ limitUsd: 20, prices })
    const model = openAICompatible({ baseURL: whole.url, apiKey: 'sk-test-aaaaaaaa', model: 'm1' })
    const before = whole.records.length
    await callModel({
      models: [model],
      request: { ...request, maxTokens: 10 },
      limits: { admission: false, budget },
    })
    await expect(
      callModel({
        models: [model],
        request: { ...request, maxTokens: 10 },
        limits: { admission: false, budget },
      }),
    ).rejects.toMatchObject({ code: 'BUDGET_EXCEEDED' })
    expect(whole.records.length - before).toBe(1)
  })
})
