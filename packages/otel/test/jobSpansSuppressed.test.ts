import { addWithDeadline, withDeadline } from '@hourglass/bullmq'
import { Deadline, ManualClock, runWithDeadline } from '@hourglass/core'
import { instrumentDeadlines, type StopInstrumentation } from '@hourglass/otel'
import { type Context, context, propagation, SpanKind, trace } from '@opentelemetry/api'
import {
  isTracingSuppressed,
  suppressTracing,
  W3CTraceContextPropagator,
} from '@opentelemetry/core'
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base'
import type { Job, JobsOptions, Queue } from 'bullmq'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { useBullmqQueues } from './helpers/bullmqQueues.js'
import { setupOtel, spanNamed } from './helpers/otel.js'

// OpenTelemetry's tracing suppression (`suppressTracing` of
// @opentelemetry/core): no span, and no span event, is recorded for work
// done in a suppressed context — an exporter's own work, a worker its owner
// chose not to trace. A BullMQ worker runs its jobs in the context it was
// started in. Real BullMQ on a real redis-server; each case beside the same
// without suppression, which is recorded. Nothing here measures time.
//
// This file shares its process with other files (the `parallel` project): each
// test closes its queues and workers, then stops the instrumentation and the
// providers it started, even when an assertion failed first, and passes its
// tracer provider rather than setting the global one.

const bull = useBullmqQueues('suppressed')
const { available, queue, worker } = bull
let otel: ReturnType<typeof setupOtel>
let stop: StopInstrumentation

beforeEach(() => {
  otel = setupOtel()
  propagation.setGlobalPropagator(new W3CTraceContextPropagator())
  stop = instrumentDeadlines({ tracerProvider: otel.tracerProvider })
})
afterEach(async () => {
  try {
    await bull.closeAll()
  } finally {
    stop()
    await otel.shutdown()
  }
})

/** Add under a deadline, from inside a span of the producer's: its context is stored with the job. */
async function addAsProducer(q: Queue): Promise<Job> {
  const producer = otel.tracer.startSpan('POST /reports', { kind: SpanKind.SERVER })
  const job = await context.with(trace.setSpan(context.active(), producer), () =>
    runWithDeadline(Deadline.after(60_000, { clock: new ManualClock() }), () =>
      addWithDeadline(q, 'weekly', {}),
    ),
  )
  producer.end()
  return job
}

/** A worker started in context `ctx`, whose processor answers whether it ran with tracing suppressed. */
function workerIn(ctx: Context, name: string): void {
  context.with(ctx, () =>
    worker(
      name,
      withDeadline(async () => isTracingSuppressed(context.active())),
    ),
  )
}

const suppressed = (ctx: Context = context.active()) => suppressTracing(ctx)

/** A job whose stored deadline another producer wrote, as it wrote it. */
const foreign = (hourglass: unknown) => ({ hourglass }) as JobsOptions

/** A valid traceparent, as a producer elsewhere stored it. */
const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'

const jobSpans = (spans: ReadableSpan[], name: string) =>
  spans.filter((s) => s.name === `process ${name}`)

describe.skipIf(!available)('instrumentDeadlines: BullMQ under suppressed tracing', () => {
  it('a job run by a worker started with tracing suppressed records no span, though its producer’s context rides with it; the same job in a worker that does not suppress has its span', async () => {
    const quiet = await queue()
    const traced = await queue()
    workerIn(suppressed(), quiet.name)
    workerIn(context.active(), traced.name)

    const quietJob = await addAsProducer(quiet.queue)
    expect(await quietJob.waitUntilFinished(quiet.events)).toBe(true)
    // Its span, had it one, ended before the job was reported finished.
    const tracedJob = await addAsProducer(traced.queue)
    expect(await tracedJob.waitUntilFinished(traced.events)).toBe(false)
    const spans = await otel.spansWhere((all) => jobSpans(all, traced.name).length > 0)

    expect(jobSpans(spans, traced.name)).toHaveLength(1)
    expect(jobSpans(spans, quiet.name)).toEqual([])
  })

  it('a job that reached a worker started with tracing suppressed after its deadline records no span either; one that reached a worker that does not suppress has its failed span', async () => {
    const quiet = await queue()
    const traced = await queue()
    workerIn(suppressed(), quiet.name)
    workerIn(context.active(), traced.name)
    const expired = foreign({
      expiresAtMs: Date.now() - 60_000,
      budgetMs: 500,
      trace: { traceparent },
    })

    const quietJob = await quiet.queue.add('late', {}, expired)
    await expect(quietJob.waitUntilFinished(quiet.events)).rejects.toThrow()
    const tracedJob = await traced.queue.add('late', {}, expired)
    await expect(tracedJob.waitUntilFinished(traced.events)).rejects.toThrow()
    const spans = await otel.spansWhere((all) => jobSpans(all, traced.name).length > 0)

    expect(jobSpans(spans, traced.name)[0]?.attributes).toMatchObject({
      'hourglass.deadline.outcome': 'expired',
    })
    expect(jobSpans(spans, quiet.name)).toEqual([])
  })

  it('a corrupt stored deadline in a worker started with tracing suppressed is no event on the span active there; in a worker that does not suppress it is', async () => {
    const quiet = await queue()
    const traced = await queue()
    // The span active around each worker's processor (the application's, or BullMQ telemetry's).
    const quietAround = otel.tracer.startSpan('quiet worker')
    const tracedAround = otel.tracer.startSpan('traced worker')
    workerIn(suppressed(trace.setSpan(context.active(), quietAround)), quiet.name)
    workerIn(trace.setSpan(context.active(), tracedAround), traced.name)
    const corrupt = foreign({ expiresAtMs: 'soon' })

    const quietJob = await quiet.queue.add('weekly', {}, corrupt)
    expect(await quietJob.waitUntilFinished(quiet.events)).toBe(true)
    const tracedJob = await traced.queue.add('weekly', {}, corrupt)
    expect(await tracedJob.waitUntilFinished(traced.events)).toBe(false)
    quietAround.end()
    tracedAround.end()

    const spans = otel.exporter.getFinishedSpans()
    const eventsOf = (name: string) => spanNamed(spans, name).events.map((e) => e.name)
    expect(eventsOf('traced worker')).toEqual(['hourglass.deadline.invalid_job'])
    expect(eventsOf('quiet worker')).toEqual([])
  })
})
