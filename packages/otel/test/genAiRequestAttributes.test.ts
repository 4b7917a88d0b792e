import { callModel, openAICompatible } from '@hourglass/llm'
import { instrumentDeadlines, type StopInstrumentation } from '@hourglass/otel'
import { type FakeProvider, reply, startFakeProvider } from '@hourglass/testkit'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { setupOtel } from './helpers/otel.js'

/**
 * The GenAI conventions recommend `server.address` and `server.port` on a
 * model call's span and on its client metrics, and the request parameters
 * (`gen_ai.request.*`) the caller set on its span.
 */

let otel: ReturnType<typeof setupOtel>
let stop: StopInstrumentation
let fake: FakeProvider

beforeEach(async () => {
  otel = setupOtel()
  stop = instrumentDeadlines({
    tracerProvider: otel.tracerProvider,
    meterProvider: otel.meterProvider,
  })
  fake = await startFakeProvider({ dialect: 'openai' })
})
afterEach(async () => {
  stop()
  await otel.shutdown()
  await fake.close()
})

const answer = reply.error(200, {
  id: 'chatcmpl-1',
  object: 'chat.completion',
  model: 'gpt-x-2026',
  choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 4, completion_tokens: 1, total_tokens: 5 },
})
const once = {
  retry: { maxAttempts: 1, budgets: false as const },
  limits: { admission: false as const },
}

describe('a model attempt’s chat span and GenAI metrics', () => {
  it('carry server.address and server.port, and the request parameters the caller set', async () => {
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
  })
})
