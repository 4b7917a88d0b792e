import { anthropic, CostBudget, callModel, gemini, type ModelAdapter } from '@hourglass/llm'
import { faultServer } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { chargeAnswer } from '../../src/budget/chargeAnswer.js'

// A tool call whose arguments are nested 100 000 levels deep (a broken or
// hostile upstream's): V8's JSON.parse reads it, JSON.stringify recurses and
// throws. The answer parsed, then a raw RangeError — no `code`, no attempt
// record — came out of `callModel` where its arguments were written again
// (the charge of an answer without usage, a Gemini stream's tool-call event).
const deep = `${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}`

const wholeAnthropic = (usage: string) =>
  `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"tool_use","id":"t1","name":"f","input":${deep}}],"stop_reason":"tool_use"${usage}}`
const wholeGemini = `{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"f","args":${deep}}}]},"finishReason":"STOP"}]}`

const sse = (type: string, data: object) =>
  `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`
const streamedAnthropic =
  sse('message_start', {
    message: {
      id: 'msg_1',
      type: 'message',
      role: 'assistant',
      model: 'm',
      content: [],
      usage: { input_tokens: 3, output_tokens: 1 },
    },
  }) +
  sse('content_block_start', {
    index: 0,
    content_block: { type: 'tool_use', id: 't1', name: 'f', input: {} },
  }) +
  sse('content_block_delta', {
    index: 0,
    delta: { type: 'input_json_delta', partial_json: deep },
  }) +
  sse('content_block_stop', { index: 0 }) +
  sse('message_delta', { delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 2 } }) +
  sse('message_stop', {})

const request = { messages: [{ role: 'user' as const, content: 'hi' }], maxTokens: 10 }

async function call(
  make: (baseURL: string) => ModelAdapter,
  contentType: string,
  body: string,
  stream = false,
) {
  const server = await faultServer({
    type: 'respond',
    status: 200,
    headers: { 'content-type': contentType },
    body,
  })
  try {
    const options = {
      models: [make(server.url)],
      deadline: false as const,
      limits: {
        admission: false as const,
        budget: new CostBudget({
          limitUsd: 100,
          prices: { m: { inputPerMTok: 1, outputPerMTok: 1 } },
        }),
      },
      retry: { budgets: false as const },
    }
    const error = await (stream
      ? callModel({ ...options, request: { ...request, stream: true } }).result
      : callModel({ ...options, request })
    ).then(
      () => undefined,
      (thrown: unknown) => thrown,
    )
    return { error, requests: server.records.length }
  } finally {
    await server.close()
  }
}

const claude = (baseURL: string) => anthropic({ baseURL, apiKey: 'k', model: 'm' })
const gem = (baseURL: string) => gemini({ baseURL, apiKey: 'k', model: 'm' })

describe('a tool call nested too deep to write', () => {
  it('anthropic, whole, without usage: an unreadable answer, not a RangeError', async () => {
    const { error, requests } = await call(claude, 'application/json', wholeAnthropic(''))
    expect(error).toMatchObject({ code: 'MODEL_UNAVAILABLE' })
    // Generated and billed, as any whole answer that cannot be read: not asked again.
    expect(requests).toBe(1)
  })

  it('anthropic, whole, with usage: the same (it could not be replayed or sent back)', async () => {
    const usage = ',"usage":{"input_tokens":3,"output_tokens":2}'
    const { error } = await call(claude, 'application/json', wholeAnthropic(usage))
    expect(error).toMatchObject({ code: 'MODEL_UNAVAILABLE' })
  })

  it('anthropic, a stream request answered whole: the same', async () => {
    const { error } = await call(claude, 'application/json', wholeAnthropic(''), true)
    expect(error).toMatchObject({ code: 'MODEL_UNAVAILABLE' })
  })

  it('gemini, whole: the same', async () => {
    const { error, requests } = await call(gem, 'application/json', wholeGemini)
    expect(error).toMatchObject({ code: 'MODEL_UNAVAILABLE' })
    expect(requests).toBe(1)
  })

  it('gemini, streamed: a typed failure (already so: the parser RangeError is classified)', async () => {
    const { error, requests } = await call(
      gem,
      'text/event-stream',
      `data: ${wholeGemini}\n\n`,
      true,
    )
    expect(error).toMatchObject({ code: 'MODEL_UNAVAILABLE' })
    expect(requests).toBe(1)
  })

  // Streamed, Anthropic's tool input comes as `partial_json` text, parsed at
  // the end: the deep object reached the caller (and an agent), whose next
  // request build threw a raw RangeError. Now it is an answer that cannot be
  // read, as whole: its tool-call events had gone out, so the stream ends
  // with STREAM_INTERRUPTED (nothing more to resend), caused by that
  // unreadable answer, and what it carries can be written again.
  it('anthropic, streamed: an unreadable answer, not a tool call the caller cannot send back', async () => {
    const server = await faultServer({
      type: 'respond',
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      body: streamedAnthropic,
    })
    try {
      const stream = callModel({
        models: [claude(server.url)],
        deadline: false,
        request: { ...request, stream: true },
        limits: { admission: false },
        retry: { budgets: false },
      })
      let failure: unknown
      try {
        for await (const _event of stream) {
          // drained
        }
      } catch (thrown) {
        failure = thrown
      }
      expect(failure).toMatchObject({ code: 'STREAM_INTERRUPTED' })
      const error = await stream.result.catch((thrown: unknown) => thrown)
      expect(error).toMatchObject({ code: 'STREAM_INTERRUPTED' })
      expect((error as { cause?: unknown }).cause).toMatchObject({
        code: 'PROVIDER_ERROR',
        kind: 'server_error',
        retryable: false,
        status: 200,
      })
      expect(String((error as { cause?: Error }).cause?.message)).toMatch(/nested too deep/)
      // What it hands back can be written again (the arguments as the text they came as).
      const partial = (error as { partialContent: unknown }).partialContent
      expect(() => JSON.stringify(partial)).not.toThrow()
      expect(server.records).toHaveLength(1)
    } finally {
      await server.close()
    }
  })

  it('anthropic, a whole-answer request answered with that stream: the same as whole', async () => {
    const { error, requests } = await call(claude, 'text/event-stream', streamedAnthropic)
    expect(error).toMatchObject({ code: 'MODEL_UNAVAILABLE' })
    expect(requests).toBe(1)
  })

  it('a streamed tool call of ordinary depth is untouched', async () => {
    const server = await faultServer({
      type: 'respond',
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      body: streamedAnthropic.replace(
        JSON.stringify(deep),
        JSON.stringify(`${'{"a":'.repeat(900)}1${'}'.repeat(900)}`),
      ),
    })
    try {
      const answer = await callModel({
        models: [claude(server.url)],
        deadline: false,
        request: { ...request, stream: true },
        limits: { admission: false },
        retry: { budgets: false },
      }).result
      const call = answer.content.find((b) => b.type === 'tool_call')
      expect(typeof (call as { arguments: unknown }).arguments).toBe('object')
    } finally {
      await server.close()
    }
  })

  it('chargeAnswer counts such arguments as nothing rather than throwing', () => {
    const budget = new CostBudget({
      limitUsd: 100,
      prices: { m: { inputPerMTok: 1, outputPerMTok: 1 } },
    })
    const usd = chargeAnswer(budget, 'm', request, {
      usage: { inputTokens: 0, outputTokens: 0 },
      usageReported: false,
      content: [{ type: 'tool_call', id: 't', name: 'f', arguments: JSON.parse(deep) }],
    })
    expect(Number.isFinite(usd)).toBe(true)
  })
})
