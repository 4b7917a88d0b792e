import { addWithDeadline, withDeadline } from '@hourglass/bullmq'
import { Deadline, ManualClock } from '@hourglass/core'
import { instrumentDeadlines, type StopInstrumentation } from '@hourglass/otel'
import { propagation } from '@opentelemetry/api'
import { W3CTraceContextPropagator } from '@opentelemetry/core'
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { useBullmqQueues } from './helpers/bullmqQueues.js'
import { setupOtel } from './helpers/otel.js'

// A job span's retry events carry what the README's Events table lists for
// every retry event — the failure retried and the back-off — as fetch's and
// llm's do: a job span's `retry` said only the attempt about to start, and
// its `retry_skipped` not what failed.

const bull = useBullmqQueues('otelretry')
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

class UpstreamError extends Error {
  readonly code = 'UPSTREAM_503'
}

const events = (span: ReadableSpan | undefined) =>
  span?.events.map((e) => [e.name, e.attributes]) ?? []

describe.skipIf(!available)('a job span’s retry events', () => {
  it('a retried attempt’s retry event names the failure (its error.type) and BullMQ’s back-off', async () => {
    const { queue: q, name } = await queue()
    let calls = 0
    worker(
      name,
      withDeadline(async () => {
        if (++calls === 1) throw new UpstreamError('upstream 503')
        return 'ok'
      }),
    )
    await addWithDeadline(
      q,
      'weekly',
      {},
      {
        deadline: Deadline.after(20_000),
        attempts: 3,
        backoff: { type: 'fixed', delay: 40 },
      },
    )
    const spans = await otel.spansWhere(
      (all) => all.filter((s) => s.name === `process ${name}`).length === 2,
    )
    const first = spans.find((s) => s.attributes['hourglass.deadline.attempt'] === 1)
    expect(first?.attributes['error.type']).toBe('UPSTREAM_503')
    expect(events(first)).toEqual([
      [
        'hourglass.deadline.retry',
        {
          'hourglass.deadline.attempt': 2,
          'hourglass.deadline.retry.reason': 'UPSTREAM_503',
          'hourglass.deadline.retry.delay_ms': 40,
        },
      ],
    ])
  })

  it('a retry dropped for want of time: its retry_skipped event names the failure too', async () => {
    const { queue: q, name } = await queue()
    worker(
      name,
      withDeadline(async (): Promise<unknown> => {
        throw new UpstreamError('upstream 503')
      }),
    )
    await addWithDeadline(
      q,
      'weekly',
      {},
      {
        deadline: Deadline.after(5_000, { clock: new ManualClock() }),
        attempts: 3,
        backoff: { type: 'fixed', delay: 60_000 },
      },
    )
    const spans = await otel.spansWhere((all) => all.some((s) => s.name === `process ${name}`))
    expect(events(spans.find((s) => s.name === `process ${name}`))).toEqual([
      [
        'hourglass.deadline.retry_skipped',
        {
          'hourglass.deadline.attempt': 1,
          'hourglass.deadline.retry.reason': 'UPSTREAM_503',
          'hourglass.deadline.retry.why': 'no-budget',
        },
      ],
    ])
  })
})
