import { Deadline, ManualClock } from '@hourglass/core'
import {
  Admission,
  type AttemptRecord,
  anthropic,
  type CallModelOptions,
  CostBudget,
  callModel,
  gemini,
  llmChannels,
  type ModelAdapter,
  openAICompatible,
} from '@hourglass/llm'
import { instrumentDeadlines, type StopInstrumentation } from '@hourglass/otel'
import { type FakeProvider, openAIErrors, reply, startFakeProvider } from '@hourglass/testkit'
import { context, SpanStatusCode, trace } from '@opentelemetry/api'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { setupOtel } from './helpers/otel.js'

/**
 * What a model attempt's chat span and the llm metrics say, through the real
 * llm, a loopback provider and the real SDK: everything the attempt's answer
 * told about itself, nothing it did not.
 */

let otel: ReturnType<typeof setupOtel>
let stop: StopInstrumentation
const providers: FakeProvider[] = []

beforeEach(() => {
  otel = setupOtel()
  stop = instrumentDeadlines({
    tracerProvider: otel.tracerProvider,
    meterProvider: otel.meterProvider,
  })
})
afterEach(async () => {
  stop()
  await otel.shutdown()
  await Promise.all(providers.splice(0).map((p) => p.close()))
})

async function provider(
  dialect: 'openai' | 'deepseek' | 'anthropic' | 'gemini',
): Promise<FakeProvider> {
  const started = await startFakeProvider({ dialect })
  providers.push(started)
  return started
}

/** Runs `run` under a span `caller`, ended after it; returns the chat spans and the caller's events. */
async function underCaller(run: () => Promise<unknown>) {
  const caller = otel.tracer.startSpan('caller')
  try {
    await context.with(trace.setSpan(context.active(), caller), run)
  } finally {
    caller.end()
  }
  const spans = otel.exporter.getFinishedSpans()
  return {
    chats: spans.filter((s) => s.name.startsWith('chat ')),
    events: spans.find((s) => s.name === 'caller')?.events ?? [],
  }
}

const request = { messages: [{ role: 'user' as const, content: 'hi' }], maxTokens: 8 }
const once: Pick<CallModelOptions, 'retry' | 'limits'> = {
  retry: { maxAttempts: 1, budgets: false },
  limits: { admission: false },
}
const SSE = { 'content-type': 'text/event-stream' }

describe('a whole answer that ended in an error (a failed attempt)', () => {
  it('its chat span carries the finish reason, the usage it was charged by, the response model and id', async () => {
    const fake = await provider('deepseek')
    // DeepSeek's `insufficient_system_resource`, whole: llm's finish reason `error`.
    fake.enqueue(
      reply.error(200, {
        id: 'cmpl-err-1',
        object: 'chat.completion',
        model: 'deepseek-chat-0324',
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content: '' },
            finish_reason: 'insufficient_system_resource',
          },
        ],
        usage: { prompt_tokens: 11, completion_tokens: 3, total_tokens: 14 },
      }),
    )
    const model = openAICompatible({
      baseURL: fake.baseURL,
      apiKey: 'sk-a',
      model: 'ds',
      dialect: 'deepseek',
    })
    const { chats, events } = await underCaller(() =>
      callModel({ models: [model], request, ...once }).catch((e: unknown) => e),
    )
    await model.close?.()
    expect(chats).toHaveLength(1)
    expect(chats[0]?.attributes).toMatchObject({
      'hourglass.llm.decision': 'fail',
      'error.type': 'server_error',
      'gen_ai.response.finish_reasons': ['error'],
      'gen_ai.usage.input_tokens': 11,
      'gen_ai.usage.output_tokens': 3,
      'gen_ai.response.model': 'deepseek-chat-0324',
      'gen_ai.response.id': 'cmpl-err-1',
    })
    expect(chats[0]?.status.code).toBe(SpanStatusCode.ERROR)
    // Still a failed attempt that was not retried, not the success of a streamed twin.
    expect(events.map((e) => e.attributes?.['hourglass.deadline.retry.why'])).toEqual([
      'max-attempts',
    ])
    expect(await otel.points('hourglass.deadline.calls.succeeded')).toEqual([])
  })
})

describe('a stream whose usage never came', () => {
  it('has no gen_ai.usage.* on its span (not 0), and its cost is still charged by the estimate', async () => {
    const fake = await provider('openai')
    const chunk = (choice: object) =>
      `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', model: 'm', choices: [{ index: 0, ...choice }] })}\n\n`
    // `include_usage` ignored (a proxy, a compatible server): no usage chunk before [DONE].
    fake.enqueue(
      reply.error(
        200,
        chunk({ delta: { role: 'assistant', content: 'Hello' }, finish_reason: null }) +
          chunk({ delta: {}, finish_reason: 'stop' }) +
          'data: [DONE]\n\n',
        SSE,
      ),
    )
    const model = openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-a', model: 'm' })
    const budget = new CostBudget({
      limitUsd: 1,
      prices: { m: { inputPerMTok: 1, outputPerMTok: 1000 } },
    })
    const { chats } = await underCaller(async () => {
      const stream = callModel({
        models: [model],
        request: { ...request, stream: true },
        ...once,
        limits: { admission: false, budget },
      })
      for await (const _ of stream) {
        // read to the end
      }
      expect((await stream.result).text).toBe('Hello')
    })
    await model.close?.()
    expect(chats).toHaveLength(1)
    expect(chats[0]?.attributes).toMatchObject({
      'hourglass.llm.decision': 'success',
      'gen_ai.response.finish_reasons': ['stop'],
    })
    expect(chats[0]?.attributes).not.toHaveProperty('gen_ai.usage.input_tokens')
    expect(chats[0]?.attributes).not.toHaveProperty('gen_ai.usage.output_tokens')
    expect(budget.spentUsd).toBeGreaterThan(0)
  })
})

describe('a whole answer without usage', () => {
  it('has no gen_ai.usage.* on its span (not 0), and its cost is charged by the estimate', async () => {
    const fake = await provider('openai')
    // A compatible server or proxy that leaves `usage` out of a whole answer.
    fake.enqueue(
      reply.error(200, {
        id: 'c1',
        object: 'chat.completion',
        model: 'm',
        choices: [
          { index: 0, message: { role: 'assistant', content: 'Hello' }, finish_reason: 'stop' },
        ],
      }),
    )
    const model = openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-a', model: 'm' })
    const budget = new CostBudget({
      limitUsd: 1,
      prices: { m: { inputPerMTok: 1, outputPerMTok: 1000 } },
    })
    let answer: Awaited<ReturnType<typeof callModel>> | undefined
    const { chats } = await underCaller(async () => {
      answer = await callModel({
        models: [model],
        request,
        ...once,
        limits: { admission: false, budget },
      })
    })
    await model.close?.()
    expect(chats).toHaveLength(1)
    expect(chats[0]?.attributes).toMatchObject({
      'hourglass.llm.decision': 'success',
      'gen_ai.response.finish_reasons': ['stop'],
      'gen_ai.response.id': 'c1',
    })
    expect(chats[0]?.attributes).not.toHaveProperty('gen_ai.usage.input_tokens')
    expect(chats[0]?.attributes).not.toHaveProperty('gen_ai.usage.output_tokens')
    // The prompt estimate plus ceil(5 / 4) = 2 output tokens at $1000/MTok, not $0.
    expect(budget.spentUsd).toBeGreaterThanOrEqual((2 * 1000) / 1e6)
    expect(answer?.usageReported).toBe(false)
  })
})

describe('a stream cut after its first token whose usage had come', () => {
  it('has the usage it was charged by on its failed span', async () => {
    const fake = await provider('openai')
    const chunk = (choice: object, extra: object = {}) =>
      `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', model: 'm', choices: [{ index: 0, ...choice }], ...extra })}\n\n`
    // An early finish with its usage, more answer after it, then an error frame.
    fake.enqueue(
      reply.error(
        200,
        chunk({ delta: { role: 'assistant', content: 'Hello' }, finish_reason: null }) +
          chunk(
            { delta: {}, finish_reason: 'stop' },
            { usage: { prompt_tokens: 11, completion_tokens: 3, total_tokens: 14 } },
          ) +
          chunk({ delta: { content: ' more' }, finish_reason: null }) +
          `data: ${JSON.stringify({ error: { message: 'boom', type: 'server_error' } })}\n\n`,
        SSE,
      ),
    )
    const model = openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-a', model: 'm' })
    const budget = new CostBudget({
      limitUsd: 1,
      prices: { m: { inputPerMTok: 1, outputPerMTok: 1000 } },
    })
    const { chats } = await underCaller(async () => {
      const stream = callModel({
        models: [model],
        request: { ...request, stream: true },
        ...once,
        limits: { admission: false, budget },
      })
      await (async () => {
        for await (const _ of stream) {
          // read until it breaks
        }
      })().catch(() => {})
    })
    await model.close?.()
    expect(budget.spentUsd).toBeCloseTo((11 * 1 + 3 * 1000) / 1e6, 10)
    expect(chats).toHaveLength(1)
    expect(chats[0]?.attributes).toMatchObject({
      'hourglass.llm.decision': 'fail',
      'gen_ai.usage.input_tokens': 11,
      'gen_ai.usage.output_tokens': 3,
    })
    expect(chats[0]?.status.code).toBe(SpanStatusCode.ERROR)
  })
})

describe('a request the adapter cannot build', () => {
  it('is a failed attempt with a why: on the retry-skipped event and the retries counter', async () => {
    const fake = await provider('anthropic')
    const claude = anthropic({ baseURL: fake.baseURL, apiKey: 'sk-ant', model: 'claude' })
    // Anthropic has no equivalent of a message's `name`: its adapter refuses it.
    const { chats, events } = await underCaller(() =>
      callModel({
        models: [claude],
        request: { messages: [{ role: 'user', content: 'hi', name: 'bob' }], maxTokens: 8 },
        ...once,
      }).catch((e: unknown) => e),
    )
    await claude.close?.()
    expect(fake.requests).toHaveLength(0)
    expect(events.map((e) => [e.name, e.attributes?.['hourglass.deadline.retry.why']])).toEqual([
      ['hourglass.deadline.retry_skipped', 'not-retryable'],
    ])
    const retries = await otel.points('hourglass.deadline.retries')
    expect(retries.map((p) => p.attributes['hourglass.deadline.retry.why'])).toEqual([
      'not-retryable',
    ])
    // Nothing went to the model: no GenAI operation to time or trace (below).
    expect(chats).toEqual([])
  })

  it('has no chat span and no gen_ai.client.operation.duration sample: no request went to the model', async () => {
    const fake = await provider('anthropic')
    fake.enqueue(
      reply.error(200, {
        id: 'msg_1',
        type: 'message',
        role: 'assistant',
        model: 'claude',
        content: [{ type: 'text', text: 'ok' }],
        stop_reason: 'end_turn',
        usage: { input_tokens: 4, output_tokens: 1 },
      }),
    )
    const claude = anthropic({ baseURL: fake.baseURL, apiKey: 'sk-ant', model: 'claude' })
    const { chats } = await underCaller(async () => {
      // Refused before sending (Anthropic has no message `name`), then one sent and answered.
      await callModel({
        models: [claude],
        request: { messages: [{ role: 'user', content: 'hi', name: 'bob' }], maxTokens: 8 },
        ...once,
      }).catch((e: unknown) => e)
      await callModel({ models: [claude], request, ...once })
    })
    await claude.close?.()
    expect(fake.requests).toHaveLength(1)
    // A 0 s sample with an error.type would pull the latency percentiles down.
    const durations = await otel.points('gen_ai.client.operation.duration')
    expect(durations.map((p) => p.attributes['error.type'] ?? 'answered')).toEqual(['answered'])
    expect(chats.map((s) => s.attributes['hourglass.llm.decision'])).toEqual(['success'])
  })
})

describe("the answer's id, system fingerprint and service tier", () => {
  it('are on the chat span under the GenAI and OpenAI names, never on a metric', async () => {
    const fake = await provider('openai')
    fake.enqueue(
      reply.error(200, {
        id: 'chatcmpl-abc',
        object: 'chat.completion',
        model: 'gpt-x-2026',
        system_fingerprint: 'fp_44709d6fcb',
        service_tier: 'flex',
        choices: [
          { index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' },
        ],
        usage: { prompt_tokens: 4, completion_tokens: 1, total_tokens: 5 },
      }),
    )
    const model = openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-a', model: 'gpt-x' })
    const { chats } = await underCaller(() => callModel({ models: [model], request, ...once }))
    await model.close?.()
    expect(chats[0]?.attributes).toMatchObject({
      'gen_ai.response.id': 'chatcmpl-abc',
      'openai.response.system_fingerprint': 'fp_44709d6fcb',
      'openai.response.service_tier': 'flex',
      'gen_ai.response.model': 'gpt-x-2026',
    })
    const succeeded = await otel.points('hourglass.deadline.calls.succeeded')
    expect(succeeded.map((p) => p.attributes)).toEqual([
      { 'hourglass.deadline.attempt': 1, 'hourglass.deadline.call.kind': 'llm' },
    ])
  })
})

describe('the prompt cache', () => {
  it("Anthropic's cache reads and writes are on the chat span under the GenAI names, and in its input tokens (the conventions' sum)", async () => {
    const fake = await provider('anthropic')
    // Anthropic's `input_tokens` 10 leaves out the cache's 70 read and 20 written.
    const cached = reply.text('ok', {
      usage: { inputTokens: 100, cachedInputTokens: 70, cacheCreationInputTokens: 20 },
    })
    fake.enqueue(cached, cached)
    const claude = anthropic({ baseURL: fake.baseURL, apiKey: 'sk-ant', model: 'claude' })
    const { chats } = await underCaller(async () => {
      await callModel({ models: [claude], request, ...once })
      // Streamed too: the counts of `message_start` and `message_delta`.
      const stream = callModel({ models: [claude], request: { ...request, stream: true }, ...once })
      for await (const _ of stream);
      await stream.result
    })
    await claude.close?.()
    expect(chats).toHaveLength(2)
    for (const chat of chats) {
      expect(chat.attributes).toMatchObject({
        'gen_ai.usage.input_tokens': 100,
        'gen_ai.usage.cache_read.input_tokens': 70,
        'gen_ai.usage.cache_creation.input_tokens': 20,
      })
    }
    // The conventions' token types are `input` and `output` only: the cache's
    // tokens are in the input sample, not a series of their own.
    const tokens = await otel.points('gen_ai.client.token.usage')
    expect(
      tokens.map((p) => [p.attributes['gen_ai.token.type'], (p.value as { sum: number }).sum]),
    ).toEqual([
      ['input', 200],
      ['output', 2],
    ])
  })

  it("OpenAI's cached tokens are the span's cache reads; no cache writes it did not report", async () => {
    const fake = await provider('openai')
    fake.enqueue(reply.text('ok', { usage: { inputTokens: 100, cachedInputTokens: 64 } }))
    const model = openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-a', model: 'gpt-x' })
    const { chats } = await underCaller(() => callModel({ models: [model], request, ...once }))
    await model.close?.()
    expect(chats[0]?.attributes).toMatchObject({
      'gen_ai.usage.input_tokens': 100,
      'gen_ai.usage.cache_read.input_tokens': 64,
    })
    expect(chats[0]?.attributes).not.toHaveProperty('gen_ai.usage.cache_creation.input_tokens')
    // Reasoning tokens as OpenAI reports them for a model that did not reason: 0.
    expect(chats[0]?.attributes).toHaveProperty('gen_ai.usage.reasoning.output_tokens', 0)
  })
})

describe('reasoning tokens', () => {
  it("OpenAI's reasoning_tokens are the span's gen_ai.usage.reasoning.output_tokens, a part of its output tokens", async () => {
    const fake = await provider('openai')
    fake.enqueue(
      reply.error(200, {
        id: 'chatcmpl-r',
        object: 'chat.completion',
        model: 'o-x',
        choices: [
          { index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' },
        ],
        usage: {
          prompt_tokens: 4,
          completion_tokens: 50,
          total_tokens: 54,
          completion_tokens_details: { reasoning_tokens: 48 },
        },
      }),
    )
    const model = openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-a', model: 'o-x' })
    const { chats } = await underCaller(() => callModel({ models: [model], request, ...once }))
    await model.close?.()
    expect(chats[0]?.attributes).toMatchObject({
      'gen_ai.usage.output_tokens': 50,
      'gen_ai.usage.reasoning.output_tokens': 48,
    })
  })
})

describe('a model attempt the deadline ended', () => {
  it('says error.type DEADLINE_EXCEEDED, as every other Hourglass span does', async () => {
    const fake = await provider('openai')
    fake.enqueue(reply.hang())
    const model = openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-a', model: 'm' })
    const clock = new ManualClock()
    const { chats } = await underCaller(async () => {
      using deadline = Deadline.after(1_000, { clock })
      const call = callModel({ models: [model], request, deadline, ...once }).catch(
        (e: unknown) => e,
      )
      await expect.poll(() => fake.requests.length).toBe(1)
      clock.advance(1_000)
      await call
    })
    await model.close?.()
    expect(chats).toHaveLength(1)
    expect(chats[0]?.attributes).toMatchObject({ 'error.type': 'DEADLINE_EXCEEDED' })
    expect(chats[0]?.status.code).toBe(SpanStatusCode.ERROR)
  })
})

describe("the GenAI client metrics (the conventions' required operation duration, and token usage)", () => {
  const DURATION_BUCKETS_S = [
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
  ]
  const TOKEN_BUCKETS = [
    1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864,
  ]
  const boundaries = (value: unknown) =>
    (value as { buckets: { boundaries: number[] } }).buckets.boundaries

  it('record an answered attempt: its duration in s and its input and output tokens', async () => {
    const fake = await provider('openai')
    fake.enqueue(
      reply.error(200, {
        id: 'chatcmpl-1',
        object: 'chat.completion',
        model: 'gpt-x-2026',
        choices: [
          { index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' },
        ],
        usage: { prompt_tokens: 4, completion_tokens: 1, total_tokens: 5 },
      }),
    )
    const model = openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-a', model: 'gpt-x' })
    await underCaller(() => callModel({ models: [model], request, ...once }))
    await model.close?.()
    const durations = await otel.points('gen_ai.client.operation.duration')
    expect(durations.map((p) => [p.attributes, boundaries(p.value)])).toEqual([
      [
        {
          'gen_ai.operation.name': 'chat',
          'gen_ai.provider.name': 'openai',
          'gen_ai.request.model': 'gpt-x',
          'gen_ai.response.model': 'gpt-x-2026',
          'hourglass.llm.provider': 'openai',
          'server.address': '127.0.0.1',
          'server.port': Number(new URL(fake.baseURL).port),
        },
        DURATION_BUCKETS_S,
      ],
    ])
    expect(await otel.unit('gen_ai.client.operation.duration')).toBe('s')
    expect(await otel.unit('gen_ai.client.token.usage')).toBe('{token}')
    const tokens = await otel.points('gen_ai.client.token.usage')
    expect(
      tokens.map((p) => [
        p.attributes['gen_ai.token.type'],
        (p.value as { sum: number }).sum,
        boundaries(p.value),
      ]),
    ).toEqual([
      ['input', 4, TOKEN_BUCKETS],
      ['output', 1, TOKEN_BUCKETS],
    ])
    expect(tokens[0]?.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'gpt-x',
      'gen_ai.response.model': 'gpt-x-2026',
    })
  })

  it('record a failed attempt with its error.type, and no tokens it was not told of', async () => {
    const fake = await provider('openai')
    fake.enqueue(reply.hang())
    const model = openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-a', model: 'm' })
    const clock = new ManualClock()
    await underCaller(async () => {
      using deadline = Deadline.after(1_000, { clock })
      const call = callModel({ models: [model], request, deadline, ...once }).catch(
        (e: unknown) => e,
      )
      await expect.poll(() => fake.requests.length).toBe(1)
      clock.advance(1_000)
      await call
    })
    await model.close?.()
    const durations = await otel.points('gen_ai.client.operation.duration')
    expect(durations.map((p) => p.attributes)).toEqual([
      {
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'openai',
        'gen_ai.request.model': 'm',
        'hourglass.llm.provider': 'openai',
        'server.address': '127.0.0.1',
        'server.port': Number(new URL(fake.baseURL).port),
        'error.type': 'DEADLINE_EXCEEDED',
      },
    ])
    expect(await otel.points('gen_ai.client.token.usage')).toEqual([])
  })
})

const answer = reply.error(200, {
  id: 'chatcmpl-1',
  object: 'chat.completion',
  model: 'gpt-x-2026',
  choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 4, completion_tokens: 1, total_tokens: 5 },
})
/**
 * The GenAI conventions recommend `server.address` and `server.port` on a
 * model call's span and on its client metrics, and the request parameters
 * (`gen_ai.request.*`) the caller set on its span.
 */
describe('a model attempt’s chat span and GenAI metrics', () => {
  it('carry server.address and server.port, and the request parameters the caller set', async () => {
    const fake = await provider('openai')
    fake.enqueue(answer)
    const model = openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-a', model: 'gpt-x' })
    const port = Number(new URL(fake.baseURL).port)
    await callModel({
      models: [model],
      request: {
        messages: [{ role: 'user', content: 'hi' }],
        maxTokens: 64,
        temperature: 0.2,
        topP: 0.9,
        stop: ['END', '###'],
        extra: { seed: 7, frequency_penalty: 0.5, presence_penalty: 0.1 },
      },
      ...once,
    })
    await model.close()
    const [chat] = otel.exporter.getFinishedSpans().filter((s) => s.name.startsWith('chat '))
    expect(chat?.attributes).toMatchObject({
      'server.address': '127.0.0.1',
      'server.port': port,
      'gen_ai.request.max_tokens': 64,
      'gen_ai.request.temperature': 0.2,
      'gen_ai.request.top_p': 0.9,
      'gen_ai.request.stop_sequences': ['END', '###'],
      'gen_ai.request.seed': 7,
      'gen_ai.request.frequency_penalty': 0.5,
      'gen_ai.request.presence_penalty': 0.1,
    })
    for (const name of ['gen_ai.client.operation.duration', 'gen_ai.client.token.usage']) {
      const points = await otel.points(name)
      expect(points.length, name).toBeGreaterThan(0)
      for (const p of points) {
        expect(p.attributes, name).toMatchObject({
          'server.address': '127.0.0.1',
          'server.port': port,
        })
        // Request parameters are span attributes only: on a metric each value is a series.
        expect(p.attributes, name).not.toHaveProperty('gen_ai.request.temperature')
      }
    }
  })

  it('leave out the parameters the caller did not set', async () => {
    const fake = await provider('openai')
    fake.enqueue(answer)
    const model = openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-a', model: 'gpt-x' })
    await callModel({
      models: [model],
      request: { messages: [{ role: 'user', content: 'hi' }], maxTokens: 8 },
      ...once,
    })
    await model.close()
    const [chat] = otel.exporter.getFinishedSpans().filter((s) => s.name.startsWith('chat '))
    expect(chat?.attributes['gen_ai.request.max_tokens']).toBe(8)
    for (const name of ['temperature', 'top_p', 'stop_sequences', 'seed', 'frequency_penalty']) {
      expect(chat?.attributes).not.toHaveProperty(`gen_ai.request.${name}`)
    }
    // No output format asked for: none said (the conventions require it only when one is).
    expect(chat?.attributes).not.toHaveProperty('gen_ai.output.type')
  })

  // Conditionally Required by the GenAI conventions "when applicable and if
  // the request includes an output format": a dashboard splitting JSON-mode
  // latency or failures from plain chat found no such attribute at all.
  it('say gen_ai.output.type when the request asks for an output format: json for json_object and json_schema, text for text', async () => {
    const fake = await provider('openai')
    const model = openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-a', model: 'gpt-x' })
    const formats = [
      { type: 'json_object' },
      { type: 'json_schema', json_schema: { name: 'quote', schema: { type: 'object' } } },
      { type: 'text' },
    ]
    for (const response_format of formats) {
      fake.enqueue(answer)
      await callModel({
        models: [model],
        request: {
          messages: [{ role: 'user', content: 'hi' }],
          maxTokens: 8,
          extra: { response_format },
        },
        ...once,
      })
    }
    await model.close()
    const chats = otel.exporter.getFinishedSpans().filter((s) => s.name.startsWith('chat '))
    expect(chats.map((s) => s.attributes['gen_ai.output.type'])).toEqual(['json', 'json', 'text'])
    // A span attribute, as the request parameters: never a metric series.
    for (const p of await otel.points('gen_ai.client.operation.duration')) {
      expect(p.attributes).not.toHaveProperty('gen_ai.output.type')
    }
  })
})

/**
 * A model attempt whose request never left (refused by @hourglass/fetch for
 * want of budget, or stopped by the caller before it was handed on) was no
 * operation on the provider: no chat span, no GenAI duration sample — and its
 * record says `sent: false`.
 */
describe('an attempt @hourglass/fetch refuses for want of budget', () => {
  it('under fetch’s minBudgetMs left: sent false, no chat span, no operation duration', async () => {
    const fake = await provider('openai')
    const model = openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-a', model: 'm' })
    const records: AttemptRecord[] = []
    // 3 ms left: under fetch's default minBudgetMs (5), so it fails without touching the network.
    using deadline = Deadline.after(3, { clock: new ManualClock() })
    const failed = await callModel({
      models: [model],
      request,
      deadline,
      onAttempt: (r) => records.push(r),
      ...once,
    }).catch((e: unknown) => e)
    await model.close?.()
    expect(failed).toBeInstanceOf(Error)
    expect(fake.requests).toHaveLength(0)
    expect(records.map((r) => [r.errorKind, r.sent])).toEqual([['deadline_exceeded', false]])
    const chats = otel.exporter.getFinishedSpans().filter((s) => s.name.startsWith('chat '))
    expect(chats.map((s) => s.name)).toEqual([])
    expect(await otel.points('gen_ai.client.operation.duration')).toEqual([])
  })
})

describe('a caller’s abort while admission waits before a retry', () => {
  it('leaves one chat span and one duration sample: the 429 that was sent, none for the retry never sent', async () => {
    const fake = await provider('openai')
    fake.enqueue(openAIErrors.rateLimited({ retryAfterS: 30 }))
    const model = openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-a', model: 'm' })
    const records: AttemptRecord[] = []
    const controller = new AbortController()
    const failed = await callModel({
      models: [model],
      request,
      signal: controller.signal,
      retry: { maxAttempts: 2, budgets: false, maxRetryAfterMs: 60_000 },
      limits: { admission: new Admission() },
      onAttempt: (r) => {
        records.push(r)
        // Admission holds the retry for the provider's 30 s: the caller leaves meanwhile.
        if (r.decision === 'retry') setImmediate(() => controller.abort(new Error('gone')))
      },
    }).catch((e: unknown) => e)
    await model.close?.()
    expect((failed as Error).message).toBe('gone')
    expect(fake.requests).toHaveLength(1)
    const unsent = records.filter((r) => r.sent === false)
    const sent = records.filter((r) => r.sent !== false)
    expect(sent.map((r) => [r.decision, r.errorKind])).toEqual([['retry', 'rate_limited']])
    expect(unsent.every((r) => r.errorKind === 'aborted')).toBe(true)
    const chats = otel.exporter.getFinishedSpans().filter((s) => s.name.startsWith('chat '))
    expect(chats).toHaveLength(1)
    const durations = await otel.points('gen_ai.client.operation.duration')
    expect(durations.reduce((n, p) => n + (p.value as { count: number }).count, 0)).toBe(1)
  })
})

describe("gen_ai.provider.name: the provider, never the adapter's name (the gateway's config key)", () => {
  it('comes from the wire the attempt spoke unless the name is a conventions value; the name is hourglass.llm.provider', async () => {
    const [openai, claude, google] = await Promise.all([
      provider('openai'),
      provider('anthropic'),
      provider('gemini'),
    ])
    const oa = { baseURL: openai.baseURL, apiKey: 'sk-a' }
    // Named as @hourglass/gateway names them: after each `providers.<name>` entry.
    const adapters: ModelAdapter[] = [
      openAICompatible({ ...oa, name: 'oa', model: 'gpt-x' }),
      anthropic({ baseURL: claude.baseURL, apiKey: 'sk-a', name: 'an', model: 'claude-x' }),
      gemini({ baseURL: google.baseURL, apiKey: 'sk-a', name: 'gm', model: 'gemini-x' }),
      openAICompatible({ ...oa, name: 'ds', model: 'deepseek-x', dialect: 'deepseek' }),
      openAICompatible({ ...oa, name: 'qw', model: 'qwen-x', dialect: 'qwen' }),
      openAICompatible({ ...oa, name: 'eb', model: 'ernie-x', dialect: 'ernie' }),
      openAICompatible({ ...oa, name: 'db', model: 'doubao-x', dialect: 'doubao' }),
      // A conventions value stays, whatever the wire: Groq's OpenAI-compatible
      // API, DeepSeek's Anthropic-compatible one.
      openAICompatible({ ...oa, name: 'groq', model: 'llama-x' }),
      anthropic({ baseURL: claude.baseURL, apiKey: 'sk-a', name: 'deepseek', model: 'ds-a' }),
      // llm's own name for a provider, on OpenAI's wire: Gemini's OpenAI-compatible endpoint.
      openAICompatible({ ...oa, name: 'gemini', model: 'gemini-o' }),
    ]
    for (let i = 0; i < 7; i++) openai.enqueue(reply.text('ok'))
    for (let i = 0; i < 2; i++) claude.enqueue(reply.text('ok'))
    google.enqueue(reply.text('ok'))
    await underCaller(async () => {
      for (const model of adapters) await callModel({ models: [model], request, ...once })
    })
    await Promise.all(adapters.map((m) => m.close?.()))
    const byModel = (attributes: Record<string, unknown>) => [
      attributes['gen_ai.request.model'],
      attributes['gen_ai.provider.name'],
      attributes['hourglass.llm.provider'],
    ]
    const expected = [
      ['gpt-x', 'openai', 'oa'],
      ['claude-x', 'anthropic', 'an'],
      ['gemini-x', 'gcp.gemini', 'gm'],
      ['deepseek-x', 'deepseek', 'ds'],
      ['qwen-x', 'dashscope', 'qw'],
      ['ernie-x', 'qianfan', 'eb'],
      ['doubao-x', 'volcengine', 'db'],
      ['llama-x', 'groq', 'groq'],
      ['ds-a', 'deepseek', 'deepseek'],
      ['gemini-o', 'gcp.gemini', 'gemini'],
    ]
    const spans = otel.exporter
      .getFinishedSpans()
      .filter((s) => s.attributes['gen_ai.operation.name'] !== undefined)
    expect(spans.map((s) => byModel(s.attributes))).toEqual(expected)
    // The metrics say the same: a dashboard grouped by provider sees `openai`, not `oa`.
    const durations = await otel.points('gen_ai.client.operation.duration')
    expect(durations.map((p) => byModel(p.attributes))).toEqual(expected)
    const tokens = await otel.points('gen_ai.client.token.usage')
    expect(new Set(tokens.map((p) => p.attributes['gen_ai.provider.name']))).toEqual(
      new Set(expected.map(([, name]) => name)),
    )
  })

  it('without a dialect an attempt (an older llm’s) keeps a name of the caller’s own, llm’s own names are mapped, and an admission event names no provider it cannot tell', () => {
    const caller = otel.tracer.startSpan('caller')
    context.with(trace.setSpan(context.active(), caller), () => {
      for (const provider of ['oa', 'qwen', 'gemini', 'groq']) {
        llmChannels.attempt.publish(() => ({
          deadline: undefined,
          attempt: 1,
          model: provider,
          provider,
          status: 200,
          latencyMs: 5,
          decision: 'success',
          costUsd: 0,
        }))
      }
      for (const provider of ['oa', 'qwen']) {
        llmChannels.admission.publish(() => ({
          provider,
          keyId: 'k1',
          action: 'wait',
          cause: 'rpm',
          waitMs: 10,
        }))
      }
    })
    caller.end()
    const spans = otel.exporter.getFinishedSpans()
    expect(
      spans
        .filter((s) => s.attributes['gen_ai.operation.name'] !== undefined)
        .map((s) => [s.attributes['gen_ai.provider.name'], s.attributes['hourglass.llm.provider']]),
    ).toEqual([
      ['oa', 'oa'],
      ['dashscope', 'qwen'],
      ['gcp.gemini', 'gemini'],
      ['groq', 'groq'],
    ])
    // The gateway's config key is no provider name: the event says only whose adapter it was.
    const events = spans.find((s) => s.name === 'caller')?.events ?? []
    expect(
      events.map((e) => [
        e.attributes?.['gen_ai.provider.name'],
        e.attributes?.['hourglass.llm.provider'],
      ]),
    ).toEqual([
      [undefined, 'oa'],
      ['dashscope', 'qwen'],
    ])
  })
})

/**
 * A stream's reader waits for its first token, which the attempt's duration
 * (to the stream's end) hides behind the answer's length: the conventions'
 * `gen_ai.request.stream`, `gen_ai.response.time_to_first_chunk` and
 * `gen_ai.client.operation.time_to_first_chunk` say it, for streams only.
 */
describe('a streamed attempt', () => {
  it('says gen_ai.request.stream and its time to first chunk in s, on its span and metric; a whole answer says neither', async () => {
    // The fake holds its tokens on a clock of its own; llm's moves meanwhile:
    // 0.3 s of retry wait, 1.5 s to the first token, 0.5 s to the second.
    const fakeClock = new ManualClock()
    const fake = await startFakeProvider({ dialect: 'openai', clock: fakeClock })
    providers.push(fake)
    fake.enqueue(
      openAIErrors.serverError(),
      reply.text('one two', { firstTokenDelayMs: 10, tokenDelayMs: 10 }),
      reply.text('whole'),
    )
    const model = openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-a', model: 'gpt-x' })
    const clock = new ManualClock()
    let attempts = 0
    const { chats } = await underCaller(async () => {
      using deadline = Deadline.after(60_000, { clock })
      const stream = callModel({
        models: [model],
        request: { ...request, stream: true },
        deadline,
        retry: {
          delay: { baseDelayMs: 300, maxDelayMs: 300, jitterRatio: 0, random: () => 0 },
          budgets: false,
        },
        limits: { admission: false },
        onAttempt: () => attempts++,
      })
      // The 500 is out and its retry waits on llm's clock: no part of the streamed attempt.
      await expect.poll(() => attempts, { interval: 1 }).toBe(1)
      clock.advance(300)
      // The retry is out and the fake holds its first token.
      await expect.poll(() => fakeClock.pendingTimers, { interval: 1 }).toBe(1)
      clock.advance(1_500)
      fakeClock.advance(10)
      for await (const event of stream) {
        if (event.type !== 'text' || event.text !== 'one') continue
        await expect.poll(() => fakeClock.pendingTimers, { interval: 1 }).toBe(1)
        clock.advance(500)
        fakeClock.advance(10)
      }
      await callModel({ models: [model], request, deadline, ...once })
    })
    await model.close?.()
    expect(chats).toHaveLength(3)
    expect(chats[1]?.attributes).toMatchObject({
      'hourglass.llm.decision': 'success',
      'gen_ai.request.stream': true,
      'gen_ai.response.time_to_first_chunk': 1.5,
    })
    expect(chats[0]?.attributes).not.toHaveProperty('gen_ai.response.time_to_first_chunk')
    expect(chats[2]?.attributes['hourglass.llm.decision']).toBe('success')
    expect(chats[2]?.attributes).not.toHaveProperty('gen_ai.request.stream')
    expect(chats[2]?.attributes).not.toHaveProperty('gen_ai.response.time_to_first_chunk')
    const firstChunk = 'gen_ai.client.operation.time_to_first_chunk'
    expect(await otel.unit(firstChunk)).toBe('s')
    const points = await otel.points(firstChunk)
    expect(
      points.map((p) => [
        p.attributes,
        (p.value as { sum: number }).sum,
        (p.value as { count: number }).count,
      ]),
    ).toEqual([
      [
        {
          'gen_ai.operation.name': 'chat',
          'gen_ai.provider.name': 'openai',
          'gen_ai.request.model': 'gpt-x',
          'gen_ai.response.model': 'gpt-x',
          'hourglass.llm.provider': 'openai',
          'server.address': '127.0.0.1',
          'server.port': Number(new URL(fake.baseURL).port),
        },
        1.5,
        1,
      ],
    ])
    // The answered attempts' durations: the stream's 2 s to its end (the
    // whole answer's 0 s beside it) — not its time to first chunk.
    const durations = await otel.points('gen_ai.client.operation.duration')
    expect(
      durations
        .filter((p) => p.attributes['error.type'] === undefined)
        .map((p) => [(p.value as { sum: number }).sum, (p.value as { count: number }).count]),
    ).toEqual([[2, 2]])
  })
})

describe("the provider's request id of a failed attempt", () => {
  it('is on its chat span (hourglass.llm.provider_request_id), never on a metric', async () => {
    const fake = await provider('openai')
    // OpenAI's 500, named by its x-request-id (`req_fake500`).
    fake.enqueue(openAIErrors.serverError())
    const model = openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-a', model: 'gpt-x' })
    const { chats } = await underCaller(() =>
      callModel({ models: [model], request, ...once }).catch((e: unknown) => e),
    )
    await model.close?.()
    expect(chats).toHaveLength(1)
    expect(chats[0]?.attributes).toMatchObject({
      'hourglass.llm.decision': 'fail',
      'error.type': 'server_error',
      'hourglass.llm.provider_request_id': 'req_fake500',
    })
    const durations = await otel.points('gen_ai.client.operation.duration')
    expect(durations).toHaveLength(1)
    expect(durations[0]?.attributes).not.toHaveProperty('hourglass.llm.provider_request_id')
  })
})
