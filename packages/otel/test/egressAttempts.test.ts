import { createFetch } from '@hourglass/fetch'
import { instrumentDeadlines, type StopInstrumentation } from '@hourglass/otel'
import { faultServer } from '@hourglass/testkit'
import { context, SpanStatusCode, trace } from '@opentelemetry/api'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { setupOtel } from './helpers/otel.js'

/**
 * Outbound attempts through the real @hourglass/fetch and undici, on a
 * loopback server: what each `deadline.egress` span says must be what
 * happened to that attempt, not to another one in flight beside it.
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

describe('egress attempts in flight together', () => {
  it('two identical calls in two traces each get their own status and duration, not the other’s', async () => {
    // The first call is slow and succeeds; the second, sent while the first
    // is still waiting, fails at once. Same method, same URL, no deadline.
    const upstream = await faultServer((_req, i) =>
      i === 0
        ? { type: 'respond', status: 200, body: 'slow', delayMs: 150 }
        : { type: 'respond', status: 503, body: 'fast' },
    )
    const fetch = createFetch({ retry: false })
    try {
      const slow = otel.tracer.startSpan('slow caller')
      const fast = otel.tracer.startSpan('fast caller')
      const first = context.with(trace.setSpan(context.active(), slow), () =>
        fetch(`${upstream.url}/price`).then((r) => r.text()),
      )
      await upstream.request(0)
      const second = context.with(trace.setSpan(context.active(), fast), () =>
        fetch(`${upstream.url}/price`).then((r) => r.text()),
      )
      await Promise.all([first, second])
      slow.end()
      fast.end()

      const attempts = otel.exporter
        .getFinishedSpans()
        .filter((s) => s.name === 'deadline.egress GET')
      const under = (parent: typeof slow) => {
        const found = attempts.filter(
          (s) => s.parentSpanContext?.spanId === parent.spanContext().spanId,
        )
        expect(found).toHaveLength(1)
        return found[0]
      }
      const slowAttempt = under(slow)
      const fastAttempt = under(fast)
      expect(slowAttempt?.spanContext().traceId).toBe(slow.spanContext().traceId)
      expect(slowAttempt?.attributes['http.response.status_code']).toBe(200)
      expect(slowAttempt?.attributes).not.toHaveProperty('error.type')
      expect(slowAttempt?.status.code).not.toBe(SpanStatusCode.ERROR)
      expect(slowAttempt?.attributes['hourglass.deadline.elapsed_ms']).toBeGreaterThanOrEqual(100)

      expect(fastAttempt?.spanContext().traceId).toBe(fast.spanContext().traceId)
      expect(fastAttempt?.attributes['http.response.status_code']).toBe(503)
      expect(fastAttempt?.attributes['error.type']).toBe('503')
      expect(fastAttempt?.status.code).toBe(SpanStatusCode.ERROR)
      expect(fastAttempt?.attributes['hourglass.deadline.elapsed_ms']).toBeLessThan(100)
    } finally {
      await fetch.close()
      await upstream.close()
    }
  })
})
