import { faultServer } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { anthropic } from '../../src/adapters/anthropic.js'
import { gemini } from '../../src/adapters/gemini.js'
import type { ModelAdapter } from '../../src/adapters/ModelAdapter.js'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { CostBudget } from '../../src/budget/CostBudget.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import { isModelUnavailable } from '../../src/errors/ModelUnavailableError.js'
import { FAST_RETRIES, useFakes, user } from './support/fakes.js'

// The streams' rule, for a whole (non-streamed) JSON answer: no content
// (text, thinking, a tool call) and no finish reason is no answer — a
// retryable server_error, asked again — not an empty success with
// `finishReason: 'unknown'`. None of the three APIs sends a whole answer so:
// OpenAI's `finish_reason` is required, Anthropic's `stop_reason` "in
// non-streaming mode … is always non-null", and a Gemini candidate without
// `finishReason` "has not stopped generating". A finish reason with no
// content is still an (empty) answer; content without one is still an
// answer, `unknown`.

const fakes = useFakes()
const servers: Array<{ close(): Promise<void> }> = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()))
})

type Make = (baseURL: string) => ModelAdapter
const openai: Make = (url) => openAICompatible({ baseURL: `${url}/v1`, apiKey: 'sk', model: 'm' })
const claude: Make = (url) => anthropic({ baseURL: url, apiKey: 'sk', model: 'm' })
const gem: Make = (url) => gemini({ baseURL: url, apiKey: 'sk', model: 'm' })

// $1 a token: a charge reads as tokens.
const prices = { m: { inputPerMTok: 1e6, outputPerMTok: 1e6 } }

async function call(make: Make, body: object, budget?: CostBudget) {
  const server = await faultServer({
    type: 'respond',
    status: 200,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
  servers.push(server)
  const records: AttemptRecord[] = []
  const result = await callModel({
    models: [fakes.adapter(make(server.url))],
    request: { messages: [user('hi')], maxTokens: 8 },
    retry: { maxAttempts: 2, delay: FAST_RETRIES },
    onAttempt: (r) => records.push(r),
    limits: { admission: false, ...(budget === undefined ? {} : { budget }) },
  }).then(
    (answer) => ({ answer, error: undefined }),
    (error: unknown) => ({ answer: undefined, error }),
  )
  return { ...result, records, requests: server.records.length }
}

/** Failed as no answer: a retryable server_error, asked of the same model again. */
function expectNoAnswer(outcome: Awaited<ReturnType<typeof call>>) {
  expect(outcome.answer).toBeUndefined()
  expect(isModelUnavailable(outcome.error)).toBe(true)
  const cause = (outcome.error as { lastCause?: { kind?: string; message?: string } }).lastCause
  expect(cause).toMatchObject({ kind: 'server_error', retryable: true, status: 200 })
  expect(String(cause?.message)).toMatch(/no answer/)
  expect(outcome.requests).toBe(2)
}

const openAIAnswer = (message: object, finish: unknown, usage?: object) => ({
  id: 'chatcmpl-1',
  object: 'chat.completion',
  model: 'm',
  choices: [{ index: 0, message: { role: 'assistant', ...message }, finish_reason: finish }],
  ...(usage === undefined ? {} : { usage }),
})

const anthropicAnswer = (content: object[], stopReason: unknown) => ({
  id: 'msg_1',
  type: 'message',
  role: 'assistant',
  model: 'm',
  content,
  stop_reason: stopReason,
  usage: { input_tokens: 5, output_tokens: 0 },
})

describe('a whole answer with no content and no finish reason is no answer', () => {
  it('openai: `content: ""`, `finish_reason: null`', async () => {
    expectNoAnswer(await call(openai, openAIAnswer({ content: '' }, null)))
  })

  it('openai: `content: null`, no `finish_reason` at all', async () => {
    const body = openAIAnswer({ content: null }, null)
    delete (body.choices[0] as { finish_reason?: unknown }).finish_reason
    expectNoAnswer(await call(openai, body))
  })

  it('anthropic: `content: []`, `stop_reason: null`', async () => {
    expectNoAnswer(await call(claude, anthropicAnswer([], null)))
  })

  it('anthropic: an empty text block, `stop_reason: null`', async () => {
    expectNoAnswer(await call(claude, anthropicAnswer([{ type: 'text', text: '' }], null)))
  })

  it('gemini: a candidate with no parts and no `finishReason`', async () => {
    expectNoAnswer(
      await call(gem, { candidates: [{ content: { role: 'model', parts: [] }, index: 0 }] }),
    )
  })

  it('charged the usage it reported (the provider counted the prompt), nothing else', async () => {
    const budget = new CostBudget({ limitUsd: 1e9, prices })
    const outcome = await call(
      openai,
      openAIAnswer({ content: '' }, null, { prompt_tokens: 7, completion_tokens: 0 }),
      budget,
    )
    expectNoAnswer(outcome)
    // Two attempts, each billed its 7 prompt tokens; on their records too.
    expect(budget.spentUsd).toBe(14)
    expect(outcome.records.map((r) => r.inputTokens)).toEqual([7, 7])
  })

  it('charged nothing when it reported no usage', async () => {
    const budget = new CostBudget({ limitUsd: 1e9, prices })
    expectNoAnswer(await call(openai, openAIAnswer({ content: '' }, null), budget))
    expect(budget.spentUsd).toBe(0)
  })
})

describe('what stays as it was', () => {
  it('openai: a finish reason with no content is an empty answer', async () => {
    const { answer, requests } = await call(openai, openAIAnswer({ content: '' }, 'stop'))
    expect(answer).toMatchObject({ text: '', finishReason: 'stop' })
    expect(requests).toBe(1)
  })

  it('openai: an unknown finish reason with no content is an empty answer too', async () => {
    const { answer, requests } = await call(openai, openAIAnswer({ content: '' }, 'eos'))
    expect(answer).toMatchObject({ text: '', finishReason: 'unknown' })
    expect(requests).toBe(1)
  })

  it('openai: content without a finish reason is an answer, `unknown`', async () => {
    const { answer } = await call(openai, openAIAnswer({ content: 'hi' }, null))
    expect(answer).toMatchObject({ text: 'hi', finishReason: 'unknown' })
  })

  it('openai: a tool call without a finish reason is an answer', async () => {
    const { answer } = await call(
      openai,
      openAIAnswer(
        {
          content: null,
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }],
        },
        null,
      ),
    )
    expect(answer?.content).toMatchObject([{ type: 'tool_call', name: 'f' }])
  })

  it('anthropic: `pause_turn` with no content is an empty answer', async () => {
    const { answer, requests } = await call(claude, anthropicAnswer([], 'pause_turn'))
    expect(answer).toMatchObject({ text: '', finishReason: 'unknown' })
    expect(requests).toBe(1)
  })

  it('gemini: `finishReason: STOP` with no parts is an empty answer', async () => {
    const { answer, requests } = await call(gem, {
      candidates: [{ content: { role: 'model' }, finishReason: 'STOP', index: 0 }],
      usageMetadata: { promptTokenCount: 3, totalTokenCount: 3 },
    })
    expect(answer).toMatchObject({ text: '', finishReason: 'stop' })
    expect(requests).toBe(1)
  })
})
