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

// A whole-answer request (`stream` not set) answered with an SSE stream: a
// server or proxy that ignores `stream: false`, or streams every answer.
// The stream is a generation, billed: it was taken for "no JSON at all" (a
// proxy's page), asked again three times — each generated and billed —,
// charged nothing, and the call failed.

const sse = (events: unknown[], end = '') =>
  events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join('') + end

const streams: Record<'openai' | 'anthropic' | 'gemini', string> = {
  openai: sse(
    [
      {
        id: 'c1',
        object: 'chat.completion.chunk',
        model: 'm-2025',
        choices: [{ index: 0, delta: { role: 'assistant', content: 'hel' } }],
      },
      {
        id: 'c1',
        object: 'chat.completion.chunk',
        choices: [{ index: 0, delta: { content: 'lo' }, finish_reason: 'stop' }],
      },
      {
        id: 'c1',
        object: 'chat.completion.chunk',
        choices: [],
        usage: { prompt_tokens: 3, completion_tokens: 2 },
      },
    ],
    'data: [DONE]\n\n',
  ),
  anthropic: [
    [
      'message_start',
      {
        type: 'message_start',
        message: {
          id: 'msg_1',
          type: 'message',
          role: 'assistant',
          model: 'm-2025',
          content: [],
          usage: { input_tokens: 3, output_tokens: 1 },
        },
      },
    ],
    [
      'content_block_start',
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
    ],
    [
      'content_block_delta',
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'hello' } },
    ],
    ['content_block_stop', { type: 'content_block_stop', index: 0 }],
    [
      'message_delta',
      { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 2 } },
    ],
    ['message_stop', { type: 'message_stop' }],
  ]
    .map(([event, data]) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`)
    .join(''),
  gemini: sse([
    {
      candidates: [{ content: { role: 'model', parts: [{ text: 'hel' }] } }],
      modelVersion: 'm-2025',
    },
    {
      candidates: [{ content: { role: 'model', parts: [{ text: 'lo' }] }, finishReason: 'STOP' }],
      usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 2 },
      modelVersion: 'm-2025',
    },
  ]),
}

const adapters: Record<keyof typeof streams, (baseURL: string) => ModelAdapter> = {
  openai: (baseURL) => openAICompatible({ baseURL, apiKey: 'k', model: 'm' }),
  anthropic: (baseURL) => anthropic({ baseURL, apiKey: 'k', model: 'm' }),
  gemini: (baseURL) => gemini({ baseURL, apiKey: 'k', model: 'm' }),
}

const prices = { m: { inputPerMTok: 1e6, outputPerMTok: 1e6 } } // $1 a token: the charge reads as tokens
const request = { messages: [{ role: 'user' as const, content: 'hi' }], maxTokens: 10 }

async function call(dialect: keyof typeof streams, body: string) {
  const server = await faultServer({
    type: 'respond',
    status: 200,
    headers: { 'content-type': 'text/event-stream' },
    body,
  })
  const budget = new CostBudget({ limitUsd: 1000, prices })
  const records: AttemptRecord[] = []
  try {
    const outcome = await callModel({
      models: [adapters[dialect](server.url)],
      request,
      deadline: false,
      limits: { budget, admission: false },
      // Backoffs of a millisecond: the retries are counted here, not timed.
      retry: { budgets: false, delay: { baseDelayMs: 1, maxDelayMs: 1, jitterRatio: 0 } },
      onAttempt: (record) => records.push(record),
    }).then(
      (response) => ({ response, error: undefined }),
      (error: unknown) => ({ response: undefined, error }),
    )
    return { ...outcome, budget, records, requests: server.records.length }
  } finally {
    await server.close()
  }
}

describe('a whole-answer request answered with a stream', () => {
  for (const dialect of ['openai', 'anthropic', 'gemini'] as const) {
    it(`${dialect}: is read as the stream it is, into the answer, asked once`, async () => {
      const { response, error, budget, records, requests } = await call(dialect, streams[dialect])
      expect(error).toBeUndefined()
      expect(response).toMatchObject({
        text: 'hello',
        finishReason: 'stop',
        model: 'm-2025',
        usage: { inputTokens: 3, outputTokens: 2 },
      })
      expect(response?.usageReported).toBeUndefined()
      expect(requests).toBe(1)
      expect(records.map((r) => r.decision)).toEqual(['success'])
      expect(budget.spentUsd).toBe(5)
    })
  }

  it('an error frame in it fails as that error', async () => {
    const body = sse([
      {
        error: {
          message: 'Rate limit reached',
          type: 'rate_limit_error',
          code: 'rate_limit_exceeded',
        },
      },
    ])
    const { error, records } = await call('openai', body)
    expect(error).toMatchObject({ code: 'MODEL_UNAVAILABLE' })
    expect(records[0]).toMatchObject({ errorKind: 'rate_limited', status: 200 })
  })

  it('one cut before its finish is a lost whole answer: not resent, charged as one', async () => {
    const body = sse([
      {
        id: 'c1',
        object: 'chat.completion.chunk',
        choices: [{ index: 0, delta: { content: 'hel' } }],
      },
    ])
    const { error, records, requests, budget } = await call('openai', body)
    expect(error).toMatchObject({ code: 'MODEL_UNAVAILABLE' })
    expect(requests).toBe(1)
    expect(records[0]).toMatchObject({ status: 200, decision: 'fail' })
    // The prompt estimate plus maxTokens: the worst case, as any whole answer lost.
    expect(budget.spentUsd).toBeGreaterThan(10)
  })

  it('one with no answer in it (`data: [DONE]` alone) is asked again, charged nothing', async () => {
    const { error, records, budget } = await call('openai', 'data: [DONE]\n\n')
    expect(error).toMatchObject({ code: 'MODEL_UNAVAILABLE' })
    expect(records.map((r) => [r.errorKind, r.decision])).toEqual([
      ['server_error', 'retry'],
      ['server_error', 'retry'],
      ['server_error', 'fail'],
    ])
    expect(budget.spentUsd).toBe(0)
  })
})
