import { readFileSync } from 'node:fs'
import { addWithDeadline, withDeadline } from '@hourglass/bullmq'
import { Deadline, ManualClock, runWithDeadline } from '@hourglass/core'
import { instrumentDeadlines, type StopInstrumentation } from '@hourglass/otel'
import { context, propagation, SpanKind, trace } from '@opentelemetry/api'
import { W3CTraceContextPropagator } from '@opentelemetry/core'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { useBullmqQueues } from './helpers/bullmqQueues.js'
import { setupOtel } from './helpers/otel.js'

// The messaging conventions: a "Process" span SHOULD link to the creation
// context of each message it accounts for (the parent is optional, for one
// message). A job's span keeps the producer as its parent and links to it,
// so a backend that follows links (or a sampler that drops the parent's
// trace) still finds the producer. And a scheduler's run that carries its
// template's deadline is an `invalid_job` event whose reason the README lists.

const bull = useBullmqQueues('otellink')
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

describe.skipIf(!available)('a job’s span and its producer', () => {
  it('links to the producer’s span (the creation context) as well as being its child', async () => {
    const { queue: q, events, name } = await queue()
    worker(
      name,
      withDeadline(async () => 'done'),
    )
    const producer = otel.tracer.startSpan('POST /reports', { kind: SpanKind.SERVER })
    const job = await context.with(trace.setSpan(context.active(), producer), () =>
      runWithDeadline(Deadline.after(5_000, { clock: new ManualClock() }), () =>
        addWithDeadline(q, 'weekly', { user: 1 }),
      ),
    )
    producer.end()
    await job.waitUntilFinished(events)
    const spans = await otel.spansWhere((all) => all.some((s) => s.name === `process ${name}`))
    const span = spans.find((s) => s.name === `process ${name}`)!
    expect(span.parentSpanContext?.spanId).toBe(producer.spanContext().spanId)
    expect(span.links.map((l) => l.context.spanId)).toEqual([producer.spanContext().spanId])
    expect(span.links[0]?.context.traceId).toBe(producer.spanContext().traceId)
  })

  it('a job added with no trace context stored has no link', async () => {
    propagation.disable()
    const { queue: q, events, name } = await queue()
    worker(
      name,
      withDeadline(async () => 'done'),
    )
    const job = await runWithDeadline(Deadline.after(5_000, { clock: new ManualClock() }), () =>
      addWithDeadline(q, 'weekly', {}),
    )
    await job.waitUntilFinished(events)
    const spans = await otel.spansWhere((all) => all.some((s) => s.name === `process ${name}`))
    expect(spans.find((s) => s.name === `process ${name}`)!.links).toEqual([])
  })

  it('a scheduler’s run carrying its template’s deadline: the event’s reason is one the README lists', async () => {
    const { queue: q, name } = await queue()
    const template = await runWithDeadline(Deadline.after(5_000), () =>
      addWithDeadline(q, 'template', {}),
    )
    await template.remove()
    await q.upsertJobScheduler(
      'every',
      { every: 60_000, limit: 1 },
      {
        name: 'run',
        data: {},
        opts: { ...template.opts },
      },
    )
    const boot = otel.tracer.startSpan('worker boot')
    const ran = new Promise<void>((resolve) => {
      context.with(trace.setSpan(context.active(), boot), () =>
        worker(
          name,
          withDeadline(async () => resolve()),
        ),
      )
    })
    await ran
    boot.end()
    const spans = await otel.spansWhere((all) => all.some((s) => s.name === 'worker boot'))
    const event = spans
      .find((s) => s.name === 'worker boot')!
      .events.find((e) => e.name === 'hourglass.deadline.invalid_job')
    const reason = event?.attributes?.['hourglass.deadline.invalid_job.reason'] as string
    expect(reason).toBe("from a job scheduler's template: one expiry for every run")
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8')
    const row = readme
      .split('\n')
      .find((line) => line.startsWith('| `hourglass.deadline.invalid_job`    |'))
    expect(row).toContain(reason)
  })
})
