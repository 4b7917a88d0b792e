import { anthropic, callModel, gemini, type ModelAdapter, openAICompatible } from '@hourglass/llm'
import { instrumentDeadlines, type StopInstrumentation } from '@hourglass/otel'
import {
  type FakeProvider,
  type ProviderDialect,
  reply,
  startFakeProvider,
} from '@hourglass/testkit'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { setupOtel } from './helpers/otel.js'

/**
 * `gen_ai.response.model` is the model the provider says answered, streamed
 * or not, in every dialect (a dashboard's "which snapshot served the alias"
 * query): never the model asked for while the answer named another, and
 * never empty. Through the real llm, the testkit's fakes and the real SDK.
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

const DIALECTS = ['openai', 'deepseek', 'qwen', 'ernie', 'doubao', 'anthropic', 'gemini'] as const
const request = { messages: [{ role: 'user' as const, content: 'hi' }], maxTokens: 8 }
const once = {
  retry: { maxAttempts: 1, budgets: false },
  limits: { admission: false },
} as const

async function adapter(dialect: ProviderDialect, fake: FakeProvider) {
  const options = { baseURL: fake.baseURL, apiKey: 'k', model: 'alias' }
  if (dialect === 'anthropic') return anthropic(options)
  if (dialect === 'gemini') return gemini(options)
  return openAICompatible({ ...options, dialect })
}

/** The answered model on the attempt's span and on its duration sample. */
async function responseModels() {
  const spans = otel.exporter.getFinishedSpans()
  const chat = spans.find((s) => s.attributes['gen_ai.operation.name'] !== undefined)
  const samples = await otel.points('gen_ai.client.operation.duration')
  return {
    span: chat?.attributes['gen_ai.response.model'],
    metric: samples.map((p) => p.attributes['gen_ai.response.model']),
  }
}

describe('gen_ai.response.model', () => {
  for (const dialect of DIALECTS) {
    it(`is the model a ${dialect} stream named, not the model asked for`, async () => {
      const fake = await startFakeProvider({ dialect })
      providers.push(fake)
      fake.enqueue(reply.text('Hello there', { model: 'alias-2025-01-01' }))
      const model = await adapter(dialect, fake)
      const stream = callModel({ models: [model], request: { ...request, stream: true }, ...once })
      for await (const _ of stream) {
        // read to the end
      }
      await stream.result
      await model.close?.()
      expect(await responseModels()).toEqual({
        span: 'alias-2025-01-01',
        metric: ['alias-2025-01-01'],
      })
    })
  }

  it('is the model asked for, not empty, when a whole answer names none', async () => {
    const fake = await startFakeProvider({ dialect: 'openai' })
    providers.push(fake)
    // A compatible server or proxy that leaves `model` out of its answer.
    fake.enqueue(
      reply.error(200, {
        id: 'c1',
        object: 'chat.completion',
        choices: [
          { index: 0, message: { role: 'assistant', content: 'Hi' }, finish_reason: 'stop' },
        ],
        usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
      }),
    )
    const model = await adapter('openai', fake)
    await callModel({ models: [model], request, ...once })
    await model.close?.()
    expect(await responseModels()).toEqual({ span: 'alias', metric: ['alias'] })
  })

  it("keeps at most 256 characters of the provider's strings, on the span as on the metric", async () => {
    const fake = await startFakeProvider({ dialect: 'openai' })
    providers.push(fake)
    // A compatible server (or a proxy before it) answering with a 1 MB model
    // name, id and fingerprint; the emoji's halves straddle the cut.
    const huge = (prefix: string) =>
      `${prefix}${'x'.repeat(255 - prefix.length)}\u{1F600}${'y'.repeat(1_000_000)}`
    fake.enqueue(
      reply.error(200, {
        id: huge('chatcmpl-'),
        object: 'chat.completion',
        model: huge('gpt-'),
        system_fingerprint: huge('fp_'),
        service_tier: huge('tier-'),
        choices: [
          { index: 0, message: { role: 'assistant', content: 'Hi' }, finish_reason: 'stop' },
        ],
        usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
      }),
    )
    const model = await adapter('openai', fake)
    await callModel({ models: [model], request, ...once })
    await model.close?.()
    const chat = otel.exporter
      .getFinishedSpans()
      .find((s) => s.attributes['gen_ai.operation.name'] !== undefined)
    const samples = [
      ...(await otel.points('gen_ai.client.operation.duration')),
      ...(await otel.points('gen_ai.client.token.usage')),
    ]
    // Cut as core's cutText cuts: 255 characters and `…`, the emoji not split.
    const cut = (prefix: string) => `${prefix}${'x'.repeat(255 - prefix.length)}…`
    // Before: each attribute was the whole 1 000 256 characters, on every
    // chat span and on each metric series, held until the process ended.
    expect({
      model: chat?.attributes['gen_ai.response.model'],
      id: chat?.attributes['gen_ai.response.id'],
      fingerprint: chat?.attributes['openai.response.system_fingerprint'],
      tier: chat?.attributes['openai.response.service_tier'],
      metrics: samples.map((p) => p.attributes['gen_ai.response.model']),
    }).toEqual({
      model: cut('gpt-'),
      id: cut('chatcmpl-'),
      fingerprint: cut('fp_'),
      tier: cut('tier-'),
      metrics: [cut('gpt-'), cut('gpt-'), cut('gpt-')],
    })
  })

  it('is left out, on the span as on the metric, when an adapter of yours names none', async () => {
    const fake = await startFakeProvider({ dialect: 'openai' })
    providers.push(fake)
    fake.enqueue(reply.text('Hi'))
    const real = await adapter('openai', fake)
    // A ModelAdapter written by hand (or wrapping one) whose answer names no model.
    const blank: ModelAdapter = Object.create(real, {
      send: {
        value: async (...args: Parameters<ModelAdapter['send']>) => {
          const sent = await real.send(...args)
          return sent.ok ? { ...sent, response: { ...sent.response, model: '' } } : sent
        },
      },
    })
    await callModel({ models: [blank], request, ...once })
    await real.close?.()
    // Before: the span said `gen_ai.response.model: ""` (a blank series in a
    // dashboard grouping by it) while the duration sample left it out.
    expect(await responseModels()).toEqual({ span: undefined, metric: [undefined] })
  })

  it('leaves gen_ai.request.model out, on the span, its name and the metrics, for an adapter of yours with model ""', async () => {
    const fake = await startFakeProvider({ dialect: 'openai' })
    providers.push(fake)
    fake.enqueue(reply.text('Hi', { model: 'served-model' }))
    const real = await adapter('openai', fake)
    // A ModelAdapter of the user's (a router, a deployment that picks the model) that names none.
    const unnamed: ModelAdapter = Object.create(real, { model: { value: '' } })
    await callModel({ models: [unnamed], request, ...once })
    await real.close?.()
    const chat = otel.exporter
      .getFinishedSpans()
      .find((s) => s.attributes['gen_ai.operation.name'] !== undefined)
    const samples = [
      ...(await otel.points('gen_ai.client.operation.duration')),
      ...(await otel.points('gen_ai.client.token.usage')),
    ]
    // Before: `gen_ai.request.model: ""` on the span and a blank series on every sample.
    expect({
      name: chat?.name,
      span: Object.hasOwn(chat?.attributes ?? {}, 'gen_ai.request.model'),
      response: chat?.attributes['gen_ai.response.model'],
      metrics: samples.map((p) => Object.hasOwn(p.attributes, 'gen_ai.request.model')),
    }).toEqual({
      name: 'chat',
      span: false,
      response: 'served-model',
      metrics: [false, false, false],
    })
  })
})
