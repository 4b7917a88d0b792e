import { once } from 'node:events'
import { withDeadline } from '@hourglass/bullmq'
import { ManualClock } from '@hourglass/core'
import { instrumentDeadlines, type StopInstrumentation } from '@hourglass/otel'
import { context, SpanStatusCode, trace } from '@opentelemetry/api'
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base'
import type { JobsOptions } from 'bullmq'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { useBullmqQueues } from './helpers/bullmqQueues.js'
import { setupOtel, spanNamed } from './helpers/otel.js'

// Jobs whose `hourglass` option another producer wrote (another language, a
// hand-written queue.add): a corrupt one runs with no deadline, and an
// operator must see that in the metrics and on the worker's span; one that
// recorded no budget must not be reported as "added with 0 ms". Real BullMQ
// on a real redis-server, the real SDK in memory (spans exported, metrics
// pulled). Nothing here measures time: stored expiries are a minute from
// now, and the worker's deadline is moved by a ManualClock.
//
// This file shares its process with other files (the `parallel` project):
// each test stops the instrumentation and the providers it started, and
// setupOtel's shutdown unsets OpenTelemetry's globals, even when an
// assertion failed first.

const bull = useBullmqQueues('foreign')
const { available, queue, worker } = bull
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
  try {
    await bull.closeAll()
  } finally {
    stop()
    await otel.shutdown()
  }
})

/** A job whose stored deadline another producer wrote, as it wrote it. */
const foreign = (hourglass: unknown) => ({ hourglass }) as JobsOptions

const jobSpan = (spans: ReadableSpan[], queueName: string) =>
  spanNamed(spans, `process ${queueName}`)

describe.skipIf(!available)('instrumentDeadlines: BullMQ jobs written by other producers', () => {
  it('a corrupt stored deadline is counted by queue, job name and field, and is an event on the span active in the worker; the value found is never recorded', async () => {
    const { queue: q, events, name } = await queue()
    // The span BullMQ's own telemetry (or the application) has active around
    // the processor: here the worker runs inside it.
    const around = otel.tracer.startSpan('worker')
    context.with(trace.setSpan(context.active(), around), () =>
      worker(
        name,
        withDeadline(async () => 'ran'),
      ),
    )
    const secret = 'sk-live-not-for-telemetry'
    const text = await q.add('weekly', {}, foreign({ expiresAtMs: secret, budgetMs: 500 }))
    const scalar = await q.add('weekly', {}, foreign(secret))
    // Run as jobs without a deadline, as documented: no job span of ours.
    expect(await text.waitUntilFinished(events)).toBe('ran')
    expect(await scalar.waitUntilFinished(events)).toBe('ran')
    around.end()

    const counted = await otel.points('hourglass.deadline.invalid_job')
    const about = { 'messaging.destination.name': name, 'bullmq.job.name': 'weekly' }
    expect(counted).toEqual(
      expect.arrayContaining([
        {
          attributes: { ...about, 'hourglass.deadline.invalid_job.field': 'expiresAtMs' },
          value: 1,
        },
        { attributes: { ...about, 'hourglass.deadline.invalid_job.field': 'hourglass' }, value: 1 },
      ]),
    )
    expect(counted).toHaveLength(2)

    const spans = otel.exporter.getFinishedSpans()
    expect(spans.map((s) => s.name)).toEqual(['worker'])
    const recorded = spanNamed(spans, 'worker').events.map((e) => [e.name, e.attributes])
    const onJob = (id: string | undefined) => ({
      ...about,
      'messaging.message.id': id,
      'hourglass.deadline.attempt': 1,
    })
    expect(recorded).toEqual([
      [
        'hourglass.deadline.invalid_job',
        {
          ...onJob(text.id),
          'hourglass.deadline.invalid_job.field': 'expiresAtMs',
          'hourglass.deadline.invalid_job.reason': 'not a finite number ≥ 0',
        },
      ],
      [
        'hourglass.deadline.invalid_job',
        {
          ...onJob(scalar.id),
          'hourglass.deadline.invalid_job.field': 'hourglass',
          'hourglass.deadline.invalid_job.reason': 'not an object',
        },
      ],
    ])
    expect(JSON.stringify(recorded)).not.toContain(secret)
  })

  it('with no span active in the worker, a corrupt deadline is still counted, and nothing fails', async () => {
    const { queue: q, events, name } = await queue()
    worker(
      name,
      withDeadline(async () => 'ran'),
    )
    const job = await q.add(
      'daily',
      {},
      foreign({ expiresAtMs: Date.now() + 60_000, budgetMs: -5 }),
    )
    expect(await job.waitUntilFinished(events)).toBe('ran')
    expect(await otel.points('hourglass.deadline.invalid_job')).toEqual([
      {
        attributes: {
          'messaging.destination.name': name,
          'bullmq.job.name': 'daily',
          'hourglass.deadline.invalid_job.field': 'budgetMs',
        },
        value: 1,
      },
    ])
    expect(otel.exporter.getFinishedSpans()).toEqual([])
  })

  it('a job that recorded no budget and reached a worker after its expiry: the queued event and the span have no budget_ms, not 0', async () => {
    const { queue: q, events, name } = await queue()
    worker(
      name,
      withDeadline(async () => 'ran'),
    )
    const job = await q.add('late', {}, foreign({ expiresAtMs: Date.now() - 60_000 }))
    await expect(job.waitUntilFinished(events)).rejects.toThrow(/no budget recorded/)
    const spans = await otel.spansWhere((all) => all.some((s) => s.name === `process ${name}`))
    const span = jobSpan(spans, name)

    expect(span.status.code).toBe(SpanStatusCode.ERROR)
    expect(span.attributes).toMatchObject({ 'hourglass.deadline.outcome': 'expired' })
    expect(span.attributes).not.toHaveProperty('hourglass.deadline.budget_ms')
    expect(span.events.map((e) => [e.name, e.attributes])).toEqual([
      [
        'hourglass.deadline.exceeded',
        {
          'hourglass.deadline.stage': 'queued',
          'hourglass.deadline.late_ms': expect.any(Number),
          'hourglass.deadline.stalled': false,
          'hourglass.deadline.action': 'failed',
        },
      ],
    ])
  })

  it('a job that recorded no budget and was stopped by its deadline: the exceeded event has no budget_ms, not 0', async () => {
    const { queue: q, events, name } = await queue()
    const clock = new ManualClock()
    let started!: () => void
    const running = new Promise<void>((resolve) => {
      started = resolve
    })
    worker(
      name,
      withDeadline(
        async (_job, _token, signal) => {
          started()
          await once(signal!, 'abort')
          throw signal!.reason
        },
        { clock },
      ),
    )
    const job = await q.add('stopped', {}, foreign({ expiresAtMs: Date.now() + 60_000 }))
    await running
    // Well past anything the job had: its deadline ends, on the worker's clock.
    clock.advance(120_000)
    await expect(job.waitUntilFinished(events)).rejects.toThrow(/no budget recorded/)
    const spans = await otel.spansWhere((all) => all.some((s) => s.name === `process ${name}`))
    const span = jobSpan(spans, name)

    expect(span.attributes).toMatchObject({ 'hourglass.deadline.outcome': 'deadline_exceeded' })
    expect(span.attributes).not.toHaveProperty('hourglass.deadline.budget_ms')
    expect(span.events.map((e) => [e.name, e.attributes])).toEqual([
      [
        'hourglass.deadline.exceeded',
        {
          'hourglass.deadline.stage': 'handler',
          'hourglass.deadline.elapsed_ms': 120_000,
          'hourglass.deadline.action': 'failed',
        },
      ],
    ])
  })
})
