import diagnostics from 'node:diagnostics_channel'
import { Deadline } from '@hourglass/core'
import { instrumentDeadlines, type StopInstrumentation } from '@hourglass/otel'
import { context, trace } from '@opentelemetry/api'
import { afterEach, describe, expect, it } from 'vitest'
import { setupOtel, spanNamed } from './helpers/otel.js'

// This file imports no publisher but core at the top: each test loads one
// package itself, after instrumentDeadlines() (a service that instruments
// first and imports its routes later). The tests use different packages, so
// their order does not matter.

let otel: ReturnType<typeof setupOtel>
// Each test's instrumentation, stopped after it even when an assertion fails
// before the test's own stop(): left subscribed, every later span comes twice.
const started: StopInstrumentation[] = []
afterEach(async () => {
  for (const stop of started.splice(0)) stop()
  await otel?.shutdown()
})

describe('instrumentDeadlines: packages loaded after it was called', () => {
  it('subscribes to a package when it loads, and stop() unsubscribes it', async () => {
    otel = setupOtel()
    const stop = instrumentDeadlines({
      tracerProvider: otel.tracerProvider,
      meterProvider: otel.meterProvider,
    })
    started.push(stop)
    // By name: @hourglass/express is not loaded yet, so there is no channel object to ask.
    expect(diagnostics.hasSubscribers('hourglass:ingress:start')).toBe(false)

    const { expressChannels } = await import('@hourglass/express')
    const subscribed = () =>
      Object.values(expressChannels)
        .filter((c) => c.hasSubscribers)
        .map((c) => c.name)
    expect(subscribed()).toEqual([
      'hourglass:ingress:start',
      'hourglass:ingress:invalid-header',
      'hourglass:ingress:expire',
      'hourglass:ingress:client-closed',
      'hourglass:ingress:late-write',
      'hourglass:ingress:end',
    ])
    const span = otel.tracer.startSpan('GET /late-import')
    context.with(trace.setSpan(context.active(), span), () =>
      expressChannels.start.publish(() => ({
        deadline: Deadline.after(500),
        req: {},
        budgetMs: 500,
        source: 'default',
        clamped: false,
        mode: 'enforce',
        refused: false,
      })),
    )
    span.end()
    expect(
      spanNamed(otel.exporter.getFinishedSpans(), 'GET /late-import').attributes,
    ).toMatchObject({ 'hourglass.deadline.budget_ms': 500, 'hourglass.deadline.source': 'default' })

    stop()
    expect(subscribed()).toEqual([])
  })

  it('subscribes to @hourglass/grpc and @hourglass/bullmq when they load', async () => {
    otel = setupOtel()
    const stop = instrumentDeadlines({ tracerProvider: otel.tracerProvider })
    started.push(stop)
    const { grpcChannels } = await import('@hourglass/grpc')
    const { bullmqChannels } = await import('@hourglass/bullmq')
    const channels = [...Object.values(grpcChannels), ...Object.values(bullmqChannels)]
    const subscribed = () => channels.filter((c) => c.hasSubscribers).map((c) => c.name)
    const before = subscribed()
    stop()
    expect(before).toEqual([
      'hourglass:grpc:server-start',
      'hourglass:grpc:server-invalid-header',
      'hourglass:grpc:server-expire',
      'hourglass:grpc:server-client-cancelled',
      'hourglass:grpc:server-late-write',
      // A handler that failed after it answered: counted.
      'hourglass:grpc:server-failed-after-answer',
      'hourglass:grpc:server-end',
      'hourglass:grpc:client-start',
      'hourglass:grpc:client-end',
      // Not `add`: the trace context is stored on `enqueue`, before the job is added.
      'hourglass:bullmq:enqueue',
      'hourglass:bullmq:start',
      'hourglass:bullmq:end',
      // A job refused for want of time (or, observe-only, one enforcing would refuse): counted, and an event on the producer's span.
      'hourglass:bullmq:refuse',
      'hourglass:bullmq:expire',
      // A job whose stored deadline is corrupt: counted, and an event on the worker's span.
      'hourglass:bullmq:invalid',
    ])
    expect(subscribed()).toEqual([])
  })

  it('does not subscribe to a package that loads after stop()', async () => {
    otel = setupOtel()
    const stop = instrumentDeadlines({ tracerProvider: otel.tracerProvider })
    stop()
    // @hourglass/llm loads @hourglass/fetch: two groups defined after stop().
    const { llmChannels } = await import('@hourglass/llm')
    const { fetchChannels } = await import('@hourglass/fetch')
    const subscribed = [...Object.values(llmChannels), ...Object.values(fetchChannels)].filter(
      (c) => c.hasSubscribers,
    )
    expect(subscribed).toEqual([])
  })
})
