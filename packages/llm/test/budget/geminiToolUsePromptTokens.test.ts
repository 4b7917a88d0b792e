import { type FaultPlan, faultServer } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { gemini } from '../../src/adapters/gemini.js'
import { CostBudget } from '../../src/budget/CostBudget.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import { dialects } from '../../src/dialects/dialects.js'

// Gemini's `usageMetadata.toolUsePromptTokenCount`: the tokens of what a
// server-side tool (Google Search grounding, URL context, code execution)
// fed back to the model — input, billed as input, and not part of
// `promptTokenCount` (`totalTokenCount` is prompt + candidates + tool-use
// prompt + thoughts). Left out, a grounded answer's usage said 151 input
// tokens where Google billed 18 480, and a `CostBudget` charged a ~100th
// of the input: its limit let through calls far past what it was set to.

const usageMetadata = {
  promptTokenCount: 151,
  candidatesTokenCount: 1089,
  toolUsePromptTokenCount: 18329,
  thoughtsTokenCount: 1120,
  totalTokenCount: 20689,
}

const body = {
  responseId: 'r1',
  modelVersion: 'gemini-2.5-flash',
  candidates: [{ content: { role: 'model', parts: [{ text: 'grounded' }] }, finishReason: 'STOP' }],
  usageMetadata,
}

const expected = {
  inputTokens: 151 + 18329,
  outputTokens: 1089 + 1120,
  reasoningTokens: 1120,
}

const prices = { 'gemini-2.5-flash': { inputPerMTok: 1, outputPerMTok: 0 } }

async function call(plan: FaultPlan, stream: boolean) {
  const server = await faultServer(plan)
  const budget = new CostBudget({ limitUsd: 10, prices })
  const records: AttemptRecord[] = []
  try {
    const options = {
      models: [gemini({ baseURL: `${server.url}/v1beta`, apiKey: 'k', model: 'gemini-2.5-flash' })],
      deadline: false as const,
      limits: { admission: false as const, budget },
      retry: { budgets: false as const },
      onAttempt: (record: AttemptRecord) => records.push(record),
    }
    const request = { messages: [{ role: 'user' as const, content: 'search it' }], maxTokens: 4096 }
    const response = stream
      ? await callModel({ ...options, request: { ...request, stream: true } }).result
      : await callModel({ ...options, request })
    return { response, budget, records }
  } finally {
    await server.close()
  }
}

describe("Gemini's toolUsePromptTokenCount is input", () => {
  it('parsed whole and streamed', () => {
    expect(dialects.gemini.parseResponse(body).usage).toEqual(expected)
    const parser = dialects.gemini.createStreamParser()
    const events = [
      ...parser.parseStreamEvent({ event: undefined, data: JSON.stringify(body) }),
      ...parser.end(),
    ]
    expect(events.at(-1)).toMatchObject({ type: 'finish', usage: expected })
  })

  it('a usage that names only the tool-use prompt is a usage reported', () => {
    const only = { ...body, usageMetadata: { toolUsePromptTokenCount: 500 } }
    const response = dialects.gemini.parseResponse(only)
    expect(response.usage).toEqual({ inputTokens: 500, outputTokens: 0 })
    expect(response.usageReported).toBeUndefined()
  })

  for (const stream of [false, true]) {
    it(`${stream ? 'streamed' : 'whole'}: the cost budget charges it, the record counts it`, async () => {
      const plan: FaultPlan = {
        type: 'respond',
        status: 200,
        headers: { 'content-type': stream ? 'text/event-stream' : 'application/json' },
        body: stream ? `data: ${JSON.stringify(body)}\n\n` : JSON.stringify(body),
      }
      const { response, budget, records } = await call(plan, stream)
      expect(response.usage).toMatchObject(expected)
      expect(budget.spentUsd).toBeCloseTo((151 + 18329) / 1e6, 9)
      expect(records.map((r) => [r.decision, r.inputTokens])).toEqual([['success', 18480]])
    })
  }
})
