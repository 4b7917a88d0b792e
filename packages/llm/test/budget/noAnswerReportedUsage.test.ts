import { faultServer } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { anthropic } from '../../src/adapters/anthropic.js'
import type { ModelAdapter } from '../../src/adapters/ModelAdapter.js'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { CostBudget } from '../../src/budget/CostBudget.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import { FAST_RETRIES, useFakes, user } from '../call/support/fakes.js'
import { openAIChunk } from '../call/support/streamingServer.js'

// A stream with no content and no finish reason is no answer: a retryable
// server_error, charged nothing — unless the provider reported usage in it
// (OpenAI's usage chunk, "the token usage statistics for the entire
// request"; Anthropic's `message_start` input counts, billed from then).
// The provider says it counted, and bills, the prompt: the attempt is
// charged by those counts, as an error after Gemini's counts is — charged
// nothing, a server that answers every request so was asked again and
// again, each attempt billed, the budget never told.

const fakes = useFakes()
const servers: Array<{ close(): Promise<void> }> = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()))
})

// $1 a token: a charge reads as tokens.
const prices = { m: { inputPerMTok: 1e6, outputPerMTok: 1e6 } }

type Make = (baseURL: string) => ModelAdapter
const openai: Make = (url) => openAICompatible({ baseURL: `${url}/v1`, apiKey: 'sk', model: 'm' })
const claude: Make = (url) => anthropic({ baseURL: url, apiKey: 'sk', model: 'm' })

async function call(make: Make, body: string, stream = true) {
  const server = await faultServer({
    type: 'respond',
    status: 200,
    headers: { 'content-type': 'text/event-stream' },
    body,
  })
  servers.push(server)
  const budget = new CostBudget({ limitUsd: 1e9, prices })
  const records: AttemptRecord[] = []
  const options = {
    models: [fakes.adapter(make(server.url))],
    request: { messages: [user('hi')], maxTokens: 8 },
    retry: { maxAttempts: 2, delay: FAST_RETRIES },
    onAttempt: (r: AttemptRecord) => records.push(r),
    limits: { admission: false as const, budget },
  }
  const answer = stream
    ? callModel({ ...options, request: { ...options.request, stream: true } }).result
    : callModel(options)
  const error = await answer.then(
    () => undefined,
    (e: unknown) => e,
  )
  const cause = (error as { lastCause?: unknown } | undefined)?.lastCause
  expect(cause).toMatchObject({ kind: 'server_error', retryable: true })
  expect(server.records.length).toBe(2)
  return { budget, records }
}

const usageChunk = (usage: object) =>
  `data: ${JSON.stringify({ id: 'chatcmpl-x', object: 'chat.completion.chunk', model: 'm', choices: [], usage })}\n\n`
const role = openAIChunk({ role: 'assistant', content: '' })
const event = (type: string, data: object) =>
  `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`

describe('a stream with no answer that reported usage is charged by it', () => {
  it('openai: a role chunk, a usage chunk, `[DONE]`', async () => {
    const { budget, records } = await call(
      openai,
      `${role}${usageChunk({ prompt_tokens: 7, completion_tokens: 0, total_tokens: 7 })}data: [DONE]\n\n`,
    )
    // Both attempts, each its 7 prompt tokens; on their records too.
    expect(budget.spentUsd).toBe(14)
    expect(records.map((r) => [r.decision, r.inputTokens])).toEqual([
      ['retry', 7],
      ['fail', 7],
    ])
  })

  it('openai: the same stream to a request for a whole answer', async () => {
    const { budget } = await call(
      openai,
      `${role}${usageChunk({ prompt_tokens: 7, completion_tokens: 0 })}data: [DONE]\n\n`,
      false,
    )
    expect(budget.spentUsd).toBe(14)
  })

  it('anthropic: `message_start` (its input counts), then `message_stop`', async () => {
    const start = event('message_start', {
      message: {
        id: 'msg_1',
        type: 'message',
        role: 'assistant',
        model: 'm',
        content: [],
        usage: { input_tokens: 5, output_tokens: 1 },
      },
    })
    const { budget, records } = await call(claude, start + event('message_stop', {}))
    // Its input count and the 1 output token it said, as a first-token timeout after it is.
    expect(budget.spentUsd).toBe(12)
    expect(records.map((r) => r.inputTokens)).toEqual([5, 5])
  })
})

describe('what stays as it was', () => {
  it('no usage reported: charged nothing', async () => {
    const { budget, records } = await call(openai, `${role}data: [DONE]\n\n`)
    expect(budget.spentUsd).toBe(0)
    expect(records.map((r) => r.inputTokens)).toEqual([undefined, undefined])
  })

  it('a usage chunk without an input count: charged nothing', async () => {
    const { budget } = await call(
      openai,
      `${role}${usageChunk({ prompt_tokens: 0, completion_tokens: 0 })}data: [DONE]\n\n`,
    )
    expect(budget.spentUsd).toBe(0)
  })
})
