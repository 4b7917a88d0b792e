import type { HourglassChannel } from '@hourglass/core'
import { callModel, type LlmAttemptMessage, llmChannels, openAICompatible } from '@hourglass/llm'
import { instrumentDeadlines, type StopInstrumentation } from '@hourglass/otel'
import { closedPort } from '@hourglass/testkit'
import { context, type Span, SpanStatusCode, trace } from '@opentelemetry/api'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { setupOtel, spanNamed } from './helpers/otel.js'

/**
 * A model attempt that got no HTTP answer (a refused connection, a name that
 * does not resolve): llm reports it with status 0, which is no status a
 * server sent. Its chat span must not say `http.response.status_code = 0`
 * (the egress span of the same send leaves it out), and no `error.type` or
 * retry reason may read "0".
 */

let otel: ReturnType<typeof setupOtel>
let stop: StopInstrumentation

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
})

/** Publish as the package would, with the message type its channel declares. */
const publish = <T>(channel: HourglassChannel<T>, message: T) => channel.publish(() => message)

function inSpan(name: string, fn: (span: Span) => void): void {
  const span = otel.tracer.startSpan(name)
  context.with(trace.setSpan(context.active(), span), () => fn(span))
}

const attempt = (extra: Partial<LlmAttemptMessage>): LlmAttemptMessage => ({
  deadline: undefined,
  attempt: 1,
  model: 'small',
  provider: 'openai',
  dialect: 'openai',
  latencyMs: 5,
  decision: 'fail',
  costUsd: 0,
  ...extra,
})

describe('a model attempt that got no HTTP answer', () => {
  it('has no http.response.status_code on its chat span, and error.type network, through the real llm', async () => {
    const port = await closedPort()
    const model = openAICompatible({
      baseURL: `http://127.0.0.1:${port}/v1`,
      apiKey: 'sk-a',
      model: 'm',
    })
    const caller = otel.tracer.startSpan('caller')
    const error = await context.with(trace.setSpan(context.active(), caller), () =>
      callModel({
        models: [model],
        request: { messages: [{ role: 'user', content: 'hi' }], maxTokens: 8 },
        retry: { maxAttempts: 1, budgets: false },
        limits: { admission: false },
      }).catch((e: unknown) => e),
    )
    caller.end()
    await model.close?.()
    expect(error).toBeInstanceOf(Error)
    const spans = otel.exporter.getFinishedSpans()
    const chat = spanNamed(spans, 'chat m')
    expect(chat.attributes).not.toHaveProperty('http.response.status_code')
    expect(chat.attributes['error.type']).toBe('network')
    expect(chat.status.code).toBe(SpanStatusCode.ERROR)
    // The egress span of the same send says the same: no status, a connect failure.
    const egress = spanNamed(spans, 'deadline.egress POST')
    expect(egress.attributes).not.toHaveProperty('http.response.status_code')
    const points = await otel.points('gen_ai.client.operation.duration')
    expect(points.map((p) => p.attributes['error.type'])).toEqual(['network'])
  })

  it('is named network, never "0", when the message names only its status 0: span, duration metric, retry event and counter', async () => {
    inSpan('caller', (caller) => {
      publish(llmChannels.attempt, attempt({ status: 0, decision: 'retry', delayMs: 10 }))
      publish(
        llmChannels.attempt,
        // The retry, sent: llm names it by the kind it gives a status 0 (`network`).
        attempt({
          attempt: 2,
          status: 0,
          decision: 'fail',
          why: 'max-attempts',
          retryReason: 'network',
        }),
      )
      caller.end()
    })
    const spans = otel.exporter.getFinishedSpans()
    const chats = spans.filter((s) => s.name === 'chat small')
    expect(chats.map((s) => s.attributes['error.type'])).toEqual(['network', 'network'])
    for (const chat of chats)
      expect(chat.attributes).not.toHaveProperty('http.response.status_code')
    const events = spanNamed(spans, 'caller').events
    expect(events.map((e) => [e.name, e.attributes?.['hourglass.deadline.retry.reason']])).toEqual([
      ['hourglass.deadline.retry', 'network'],
      ['hourglass.deadline.retry_skipped', 'network'],
    ])
    const durations = await otel.points('gen_ai.client.operation.duration')
    expect(durations.map((p) => p.attributes['error.type'])).toEqual(['network'])
    const retries = await otel.points('hourglass.deadline.retries')
    expect(retries.map((p) => p.attributes['hourglass.deadline.retry.reason'])).toEqual([
      'network',
      'network',
    ])
    // No metric series of this package has a status 0 anywhere in its attributes.
    const all = [...durations, ...retries]
    for (const p of all) expect(Object.values(p.attributes)).not.toContain('0')
    for (const p of all) expect(Object.values(p.attributes)).not.toContain(0)
  })

  it('keeps a real status as it came: the span attribute and, with no kind or class, the error.type', async () => {
    inSpan('caller', (caller) => {
      publish(llmChannels.attempt, attempt({ status: 502 }))
      caller.end()
    })
    const chat = spanNamed(otel.exporter.getFinishedSpans(), 'chat small')
    expect(chat.attributes['http.response.status_code']).toBe(502)
    expect(chat.attributes['error.type']).toBe('502')
  })
})
