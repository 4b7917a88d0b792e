import type { HourglassChannel } from '@hourglass/core'
import { type LlmAttemptMessage, llmChannels } from '@hourglass/llm'
import { instrumentDeadlines, type StopInstrumentation } from '@hourglass/otel'
import { context, type Span, trace } from '@opentelemetry/api'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { setupOtel, spanNamed } from './helpers/otel.js'

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

const REASON = 'hourglass.deadline.retry.reason'

/** Publish as the package would, with the message type its channel declares. */
const publish = <T>(channel: HourglassChannel<T>, message: T) => channel.publish(() => message)

function inSpan(name: string, fn: (span: Span) => void): void {
  const span = otel.tracer.startSpan(name)
  context.with(trace.setSpan(context.active(), span), () => fn(span))
}

/**
 * A retry as `hourglass:llm:attempt` declares it: `errorKind`, `errorClass`
 * and `status` are all optional there, so a publisher may send none of them.
 */
const retry = (extra: Partial<LlmAttemptMessage>): LlmAttemptMessage => ({
  deadline: undefined,
  attempt: 1,
  model: 'small',
  provider: 'fake',
  latencyMs: 5,
  decision: 'retry',
  delayMs: 20,
  costUsd: 0,
  ...extra,
})

describe('the retry reason of a model attempt', () => {
  it('is left out, never "undefined", when the message names no kind, class or status: on the span event and on the metric', async () => {
    inSpan('POST /chat', (server) => {
      publish(llmChannels.attempt, retry({}))
      // The model not tried again: counted (a decision to retry counts only once sent).
      publish(
        llmChannels.attempt,
        retry({ decision: 'fail', delayMs: undefined, why: 'max-attempts' }),
      )
      server.end()
    })
    const event = spanNamed(otel.exporter.getFinishedSpans(), 'POST /chat').events[0]
    expect(event?.name).toBe('hourglass.deadline.retry')
    expect(event?.attributes).toEqual({
      'hourglass.deadline.attempt': 2,
      'hourglass.deadline.retry.delay_ms': 20,
    })
    const points = await otel.points('hourglass.deadline.retries')
    expect(points.map((p) => [p.attributes, p.value])).toEqual([
      [
        {
          'hourglass.deadline.retry.outcome': 'skipped',
          'hourglass.deadline.retry.why': 'max-attempts',
          'hourglass.deadline.call.kind': 'llm',
        },
        1,
      ],
    ])
  })

  it('is the first of kind, class and status the message names', async () => {
    inSpan('POST /chat', (server) => {
      publish(llmChannels.attempt, retry({ errorKind: 'overloaded', status: 529 }))
      publish(llmChannels.attempt, retry({ errorClass: 'ProviderError', status: 503 }))
      publish(llmChannels.attempt, retry({ status: 500 }))
      server.end()
    })
    const events = spanNamed(otel.exporter.getFinishedSpans(), 'POST /chat').events
    expect(events.map((e) => e.attributes?.[REASON])).toEqual([
      'overloaded',
      'ProviderError',
      '500',
    ])
    // Decisions only: a model retry counts once its attempt was sent, by the
    // `retryReason` llm puts on it (see modelRetryCountedWhenSent.test.ts).
    expect(await otel.points('hourglass.deadline.retries')).toEqual([])
  })

  it("of a model not tried again (why set: fallback or fail) is a skipped retry, as fetch's", async () => {
    inSpan('POST /chat', (server) => {
      publish(
        llmChannels.attempt,
        retry({ decision: 'fail', delayMs: undefined, status: 500, why: 'no-budget' }),
      )
      // Without a why (nothing was sent, or an older publisher): no decision to count.
      publish(llmChannels.attempt, retry({ decision: 'fail', delayMs: undefined }))
      server.end()
    })
    const events = spanNamed(otel.exporter.getFinishedSpans(), 'POST /chat').events
    expect(events.map((e) => [e.name, e.attributes])).toEqual([
      [
        'hourglass.deadline.retry_skipped',
        {
          'hourglass.deadline.attempt': 1,
          'hourglass.deadline.retry.reason': '500',
          'hourglass.deadline.retry.why': 'no-budget',
        },
      ],
    ])
    const points = await otel.points('hourglass.deadline.retries')
    expect(points.map((p) => [p.attributes, p.value])).toEqual([
      [
        {
          'hourglass.deadline.retry.outcome': 'skipped',
          'hourglass.deadline.retry.reason': '500',
          'hourglass.deadline.retry.why': 'no-budget',
          'hourglass.deadline.call.kind': 'llm',
        },
        1,
      ],
    ])
  })
})
