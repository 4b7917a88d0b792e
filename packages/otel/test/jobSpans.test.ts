import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { addWithDeadline, withDeadline } from '@hourglass/bullmq'
import { currentDeadline, Deadline, ManualClock, runWithDeadline } from '@hourglass/core'
import { createFetch, type HourglassFetch } from '@hourglass/fetch'
import {
  DeadlineContextManager,
  DeadlinePropagator,
  instrumentDeadlines,
  type StopInstrumentation,
} from '@hourglass/otel'
import {
  context,
  propagation,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import { CompositePropagator, W3CTraceContextPropagator } from '@opentelemetry/core'
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base'
import type { Job, Queue } from 'bullmq'
import { Redis } from 'ioredis'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { useBullmqQueues } from './helpers/bullmqQueues.js'
import { setupOtel } from './helpers/otel.js'

// Real BullMQ on a real redis-server: the producer's trace context is stored
// with the job and the worker's span is its child; the spans come from
// instrumentDeadlines alone (no BullMQ telemetry). Producers' deadlines are on
// a ManualClock where a budget is checked or a short one must survive the
// add on a loaded box: it does not move while the job is added.

const bull = useBullmqQueues('otel')
const { available, queue, worker } = bull
let otel: ReturnType<typeof setupOtel>
let stop: StopInstrumentation

beforeEach(() => {
  otel = setupOtel()
  // With the DeadlinePropagator beside W3C, as a service may run it: the job keeps its deadline its own way.
  propagation.setGlobalPropagator(
    new CompositePropagator({
      propagators: [new W3CTraceContextPropagator(), new DeadlinePropagator()],
    }),
  )
  stop = instrumentDeadlines({ tracerProvider: otel.tracerProvider })
})
afterEach(async () => {
  try {
    await bull.closeAll()
  } finally {
    // Even if a close fails: the subscriptions and providers must not outlive the file.
    stop()
    await otel.shutdown()
  }
})

/** Add under `deadline`, from inside a span of the producer's, as a request handler would. */
async function addAsProducer(q: Queue, deadline: Deadline): Promise<{ producer: Span; job: Job }> {
  const producer = otel.tracer.startSpan('POST /reports', { kind: SpanKind.SERVER })
  const job = await context.with(trace.setSpan(context.active(), producer), () =>
    runWithDeadline(deadline, () => addWithDeadline(q, 'weekly', { user: 1 })),
  )
  producer.end()
  return { producer, job }
}

/** Redis TIME's reply, in ms: the clock a job's deadline is kept on. */
const timeMs = ([seconds, micros]: Array<number | string>) =>
  Number(seconds) * 1000 + Number(micros) / 1000

const jobSpan = (spans: ReadableSpan[], queueName: string) => {
  const found = spans.filter((s) => s.name === `process ${queueName}`)
  expect(found).toHaveLength(1)
  return found[0] as ReadableSpan
}

describe.skipIf(!available)('instrumentDeadlines: BullMQ', () => {
  it('a job’s span is a child of the span that added it, through the context stored with the job; it shows the job, its budget, and what was left at start and end', async () => {
    const { queue: q, events, name } = await queue()
    worker(
      name,
      withDeadline(async () => 'done'),
    )
    const { producer, job } = await addAsProducer(
      q,
      Deadline.after(5_000, { clock: new ManualClock() }),
    )
    await job.waitUntilFinished(events)
    const spans = await otel.spansWhere((all) => all.some((s) => s.name === `process ${name}`))
    const span = jobSpan(spans, name)

    expect(span.kind).toBe(SpanKind.CONSUMER)
    expect(span.spanContext().traceId).toBe(producer.spanContext().traceId)
    expect(span.parentSpanContext?.spanId).toBe(producer.spanContext().spanId)
    expect(span.attributes).toMatchObject({
      'messaging.system': 'bullmq',
      // Required by the messaging conventions beside its type: the system's own word.
      'messaging.operation.name': 'process',
      'messaging.operation.type': 'process',
      'messaging.destination.name': name,
      'messaging.message.id': job.id,
      'bullmq.job.name': 'weekly',
      'hourglass.deadline.attempt': 1,
      'hourglass.deadline.mode': 'enforce',
      'hourglass.deadline.outcome': 'completed',
    })
    const budget = span.attributes['hourglass.deadline.budget_ms'] as number
    const atStart = span.attributes['hourglass.deadline.remaining_ms'] as number
    const atEnd = span.attributes['hourglass.deadline.remaining_at_end_ms'] as number
    expect(budget).toBe(5_000)
    expect(atStart).toBeLessThanOrEqual(budget)
    expect(atEnd).toBeLessThanOrEqual(atStart)
    expect(span.status.code).toBe(SpanStatusCode.UNSET)

    // Stored with the job: the W3C fields only — the deadline rides in its own form.
    const stored = (await q.getJob(job.id!))!.opts as { hourglass?: { trace?: object } }
    expect(Object.keys(stored.hourglass?.trace ?? {})).toEqual(['traceparent'])
  })

  it('a job refused at the add (its delay outlasts its deadline), and in dark mode one enforcing would refuse, is an event on the producer’s span and a count', async () => {
    // With the meter provider too: the count is the one a dark-mode rollout is read by.
    stop()
    stop = instrumentDeadlines({
      tracerProvider: otel.tracerProvider,
      meterProvider: otel.meterProvider,
    })
    const { queue: q, name } = await queue()
    const producer = otel.tracer.startSpan('POST /reports', { kind: SpanKind.SERVER })
    const clock = new ManualClock()
    const within = <T>(deadline: Deadline, fn: () => Promise<T>) =>
      context.with(trace.setSpan(context.active(), producer), () => runWithDeadline(deadline, fn))
    // Enforcing: a job due in 10 s under 5 s left would reach a worker too late. Refused.
    await expect(
      within(Deadline.after(5_000, { clock }), () =>
        addWithDeadline(q, 'weekly', { user: 1 }, { delay: 10_000 }),
      ),
    ).rejects.toThrow(/job "weekly" has a delay of 10000 ms but only 5000 ms left/)
    // Observe-only: added all the same, and said to be what enforcing would refuse.
    const observed = await within(Deadline.after(5_000, { clock, observe: true }), () =>
      addWithDeadline(q, 'weekly', { user: 2 }, { delay: 10_000 }),
    )
    producer.end()
    const span = otel.exporter
      .getFinishedSpans()
      .find((s) => s.spanContext().spanId === producer.spanContext().spanId)
    // Before: neither add left a trace or a count anywhere.
    expect(
      span?.events
        .filter((e) => e.name === 'hourglass.deadline.job_refused')
        .map((e) => e.attributes),
    ).toEqual([
      {
        'messaging.destination.name': name,
        'bullmq.job.name': 'weekly',
        'hourglass.deadline.job_refused.reason': 'delay',
        'hourglass.deadline.job_refused.delay_ms': 10_000,
        'hourglass.deadline.remaining_ms': 5_000,
        'hourglass.deadline.action': 'refused',
      },
      {
        'messaging.destination.name': name,
        'messaging.message.id': observed.id,
        'bullmq.job.name': 'weekly',
        'hourglass.deadline.job_refused.reason': 'delay',
        'hourglass.deadline.job_refused.delay_ms': 10_000,
        'hourglass.deadline.remaining_ms': 5_000,
        'hourglass.deadline.action': 'observed',
      },
    ])
    const count = (action: string) =>
      otel.counter('hourglass.deadline.job_refused', {
        'messaging.destination.name': name,
        'bullmq.job.name': 'weekly',
        'hourglass.deadline.job_refused.reason': 'delay',
        'hourglass.deadline.action': action,
      })
    expect([await count('refused'), await count('observed')]).toEqual([1, 1])
  })

  it('a job that expired in the queue gets a failed span with a deadline.exceeded event at stage queued', async () => {
    const { queue: q, events, name } = await queue()
    let runs = 0
    const w = worker(
      name,
      withDeadline(async () => {
        runs++
      }),
      false,
    )
    const { producer, job } = await addAsProducer(
      q,
      Deadline.after(100, { clock: new ManualClock() }),
    )
    // The worker is away until the job's deadline has passed on the Redis clock, where it is kept.
    const { expiresAtMs } = (job.opts as unknown as { hourglass: { expiresAtMs: number } })
      .hourglass
    const client = new Redis(bull.port(), '127.0.0.1')
    bull.onClose(() => client.quit())
    await expect
      .poll(async () => timeMs(await client.time()), { interval: 20, timeout: 10_000 })
      .toBeGreaterThan(expiresAtMs)
    w.run()
    await job.waitUntilFinished(events).catch(() => {})
    const spans = await otel.spansWhere((all) => all.some((s) => s.name === `process ${name}`))
    const span = jobSpan(spans, name)

    expect(runs).toBe(0)
    expect(span.parentSpanContext?.spanId).toBe(producer.spanContext().spanId)
    expect(span.status.code).toBe(SpanStatusCode.ERROR)
    expect(span.attributes).toMatchObject({
      'hourglass.deadline.outcome': 'expired',
      'hourglass.deadline.remaining_ms': 0,
      'error.type': 'DEADLINE_EXCEEDED',
    })
    const event = span.events.find((e) => e.name === 'hourglass.deadline.exceeded')
    expect(event?.attributes).toMatchObject({
      'hourglass.deadline.stage': 'queued',
      'hourglass.deadline.action': 'failed',
      'hourglass.deadline.stalled': false,
    })
    expect(event?.attributes?.['hourglass.deadline.late_ms']).toBeGreaterThan(0)
  })

  it('dark mode: a job that reached its worker too late and then completed has one observed deadline.exceeded event, at stage queued', async () => {
    const { queue: q, events, name } = await queue()
    let runs = 0
    const w = worker(
      name,
      withDeadline(async () => {
        runs++
      }),
      false,
    )
    const { job } = await addAsProducer(
      q,
      Deadline.after(100, { observe: true, clock: new ManualClock() }),
    )
    const { expiresAtMs } = (job.opts as unknown as { hourglass: { expiresAtMs: number } })
      .hourglass
    const client = new Redis(bull.port(), '127.0.0.1')
    bull.onClose(() => client.quit())
    await expect
      .poll(async () => timeMs(await client.time()), { interval: 20, timeout: 10_000 })
      .toBeGreaterThan(expiresAtMs)
    w.run()
    await job.waitUntilFinished(events)
    const spans = await otel.spansWhere((all) => all.some((s) => s.name === `process ${name}`))
    const span = jobSpan(spans, name)
    expect(runs).toBe(1)
    expect(span.attributes).toMatchObject({ 'hourglass.deadline.mode': 'observe' })
    // What enforcement would have done (not run it) is the queued event; the
    // run that followed is not a second overrun "while handling".
    expect(
      span.events
        .filter((e) => e.name === 'hourglass.deadline.exceeded')
        .map((e) => [
          e.attributes?.['hourglass.deadline.stage'],
          e.attributes?.['hourglass.deadline.action'],
        ]),
    ).toEqual([['queued', 'observed']])
  })

  it('a job stopped by its deadline while running fails its span with a deadline.exceeded event at stage handler', async () => {
    const { queue: q, events, name } = await queue()
    // The worker's deadline moved by hand once the job runs: no real 300 ms
    // that a slow add could use up before the job is stored. 60 s, not
    // 300 ms: the job's expiry is kept on the Redis clock, which runs in real
    // time from the add to the worker's pickup, and a loaded box that took
    // longer than 300 ms to get it there expired it at stage queued, its
    // handler never run (a run of exceededGrpcAndJobs saw "reached a worker
    // 41 ms after its deadline (added with 300 ms left)").
    const clock = new ManualClock()
    let started!: (deadline: Deadline) => void
    const running = new Promise<Deadline>((resolve) => {
      started = resolve
    })
    worker(
      name,
      withDeadline(
        (_job, _token, signal) =>
          new Promise((_resolve, reject) => {
            signal?.addEventListener('abort', () => reject(signal.reason))
            started(currentDeadline()!)
          }),
        { clock },
      ),
    )
    const { job } = await addAsProducer(q, Deadline.after(60_000, { clock: new ManualClock() }))
    const deadline = await running
    clock.advance(deadline.remaining() + 1)
    await job.waitUntilFinished(events).catch(() => {})
    const spans = await otel.spansWhere((all) => all.some((s) => s.name === `process ${name}`))
    const span = jobSpan(spans, name)
    expect(span.attributes).toMatchObject({
      'hourglass.deadline.outcome': 'deadline_exceeded',
      'error.type': 'DEADLINE_EXCEEDED',
    })
    expect(
      span.events.find((e) => e.name === 'hourglass.deadline.exceeded')?.attributes,
    ).toMatchObject({
      'hourglass.deadline.stage': 'handler',
      'hourglass.deadline.action': 'failed',
    })
  })

  it('dark mode: a job that fails after its observe-only deadline keeps its own failure on its span, with a deadline.exceeded event (action observed)', async () => {
    const { queue: q, events, name } = await queue()
    const clock = new ManualClock()
    let started!: (deadline: Deadline) => void
    const running = new Promise<Deadline>((resolve) => {
      started = resolve
    })
    let proceed!: () => void
    const proceeding = new Promise<void>((resolve) => {
      proceed = resolve
    })
    worker(
      name,
      withDeadline(
        async (): Promise<unknown> => {
          started(currentDeadline()!)
          await proceeding
          throw new TypeError('upstream said no')
        },
        { clock },
      ),
    )
    const { job } = await addAsProducer(
      q,
      Deadline.after(10_000, { observe: true, clock: new ManualClock() }),
    )
    const deadline = await running
    clock.advance(deadline.remaining() + 1)
    proceed()
    await job.waitUntilFinished(events).catch(() => {})
    const spans = await otel.spansWhere((all) => all.some((s) => s.name === `process ${name}`))
    const span = jobSpan(spans, name)
    expect(span.attributes).toMatchObject({
      'hourglass.deadline.mode': 'observe',
      'hourglass.deadline.outcome': 'failed',
      'error.type': 'TypeError', // the job's own failure, not the deadline's
    })
    expect(
      span.events.find((e) => e.name === 'hourglass.deadline.exceeded')?.attributes,
    ).toMatchObject({
      'hourglass.deadline.stage': 'handler',
      'hourglass.deadline.budget_ms': 10_000,
      'hourglass.deadline.action': 'observed',
    })
  })

  it('dark mode: a retry enforcement would have dropped is kept, with a retry_skipped event (action observed) beside the retry', async () => {
    const { queue: q, name } = await queue()
    worker(
      name,
      withDeadline(async (): Promise<unknown> => {
        throw new Error('upstream 503')
      }),
    )
    const producer = otel.tracer.startSpan('POST /reports', { kind: SpanKind.SERVER })
    const job = await context.with(trace.setSpan(context.active(), producer), () =>
      addWithDeadline(
        q,
        'weekly',
        {},
        {
          deadline: Deadline.after(5_000, { observe: true, clock: new ManualClock() }),
          attempts: 3,
          backoff: { type: 'fixed', delay: 60_000 },
        },
      ),
    )
    producer.end()
    const spans = await otel.spansWhere((all) => all.some((s) => s.name === `process ${name}`))
    const span = jobSpan(spans, name)
    expect(span.attributes).toMatchObject({ 'hourglass.deadline.outcome': 'retry' })
    expect(span.events.map((e) => [e.name, e.attributes])).toEqual([
      [
        'hourglass.deadline.retry',
        {
          'hourglass.deadline.attempt': 2,
          'hourglass.deadline.retry.reason': 'Error',
          'hourglass.deadline.retry.delay_ms': 60_000,
        },
      ],
      [
        'hourglass.deadline.retry_skipped',
        {
          'hourglass.deadline.attempt': 1,
          'hourglass.deadline.retry.reason': 'Error',
          'hourglass.deadline.retry.why': 'no-budget',
          'hourglass.deadline.action': 'observed',
        },
      ],
    ])
    await expect.poll(async () => (await q.getJob(job.id!))?.getState()).toBe('delayed')
  })

  it('calls made inside the job are children of its span; DeadlineContextManager makes it the active span for other instrumentations too', async () => {
    const server: Server = createServer((_req, res) => res.end('ok'))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const fetch: HourglassFetch = createFetch()
    bull.onClose(
      () => fetch.close(),
      () => new Promise((resolve) => server.close(resolve)),
    )
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
    context.disable()
    context.setGlobalContextManager(
      new DeadlineContextManager(new AsyncLocalStorageContextManager()).enable(),
    )
    const { queue: q, events, name } = await queue()
    let active: Span | undefined
    worker(
      name,
      withDeadline(async () => {
        active = trace.getActiveSpan()
        return (await fetch(url)).text()
      }),
    )
    const { job } = await addAsProducer(q, Deadline.after(5_000))
    expect(await job.waitUntilFinished(events)).toBe('ok')
    const spans = await otel.spansWhere(
      (all) =>
        all.some((s) => s.name === `process ${name}`) &&
        all.some((s) => s.name === 'deadline.egress GET'),
    )
    const span = jobSpan(spans, name)
    const attempt = spans.find((s) => s.name === 'deadline.egress GET')
    expect(attempt?.parentSpanContext?.spanId).toBe(span.spanContext().spanId)
    expect(active?.spanContext().spanId).toBe(span.spanContext().spanId)
  })

  it('a job whose stored traceparent is not a valid one starts a trace of its own', async () => {
    const { queue: q, events, name } = await queue()
    worker(
      name,
      withDeadline(async () => 'done'),
    )
    const job = await q.add('forged', {}, {
      hourglass: {
        expiresAtMs: Date.now() + 60_000,
        budgetMs: 60_000,
        trace: { traceparent: 'forged' },
      },
    } as object)
    await job.waitUntilFinished(events)
    const spans = await otel.spansWhere((all) => all.some((s) => s.name === `process ${name}`))
    expect(jobSpan(spans, name).parentSpanContext).toBeUndefined()
  })
})
