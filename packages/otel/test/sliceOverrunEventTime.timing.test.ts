import { bullmqChannels } from '@hourglass/bullmq'
import { Deadline } from '@hourglass/core'
import { instrumentDeadlines } from '@hourglass/otel'
import { hrTimeToMilliseconds } from '@opentelemetry/core'
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base'
import { describe, expect, it } from 'vitest'
import { spanNamed } from './helpers/otel.js'

/**
 * A slice's `hourglass.deadline.exceeded` event is stamped when the slice's
 * time ran out, as the request's is, not when the slice ended. Core announces
 * an overrun only at the slice's end, and in dark mode that is whenever the
 * step finished: a 20 ms slice whose step took 150 ms had its event at
 * +150 ms, drawn by the waterfall ("when it happened") after the request's
 * own expiry that it came before. Real time (the SDK stamps spans on it),
 * hence a timing file; providers passed, nothing global set.
 */
it('stamps a dark-mode slice’s exceeded event when its allotment ran out, not at its end', async () => {
  const exporter = new InMemorySpanExporter()
  const tracerProvider = new BasicTracerProvider({
    spanProcessors: [new SimpleSpanProcessor(exporter)],
  })
  const stop = instrumentDeadlines({ tracerProvider })
  const deadline = Deadline.after(5000, { observe: true })
  try {
    await deadline
      .plan({ slow: { ms: 20 } }, { reserveMs: 0 })
      .run('slow', () => new Promise((resolve) => setTimeout(resolve, 150)))
  } finally {
    deadline.dispose()
    stop()
  }
  const slice = spanNamed(exporter.getFinishedSpans(), 'deadline.slice slow')
  expect(slice.attributes['hourglass.deadline.slice.outcome']).toBe('observed')
  const start = hrTimeToMilliseconds(slice.startTime)
  const end = hrTimeToMilliseconds(slice.endTime)
  const [event] = slice.events
  expect(event?.name).toBe('hourglass.deadline.exceeded')
  // 20 ms after the slice began (the SDK's start and ours a few µs apart), long before its end.
  const ranOut = hrTimeToMilliseconds(event?.time ?? [0, 0]) - start
  expect(ranOut).toBeGreaterThanOrEqual(19.5)
  expect(ranOut).toBeLessThan(25)
  expect(end - start).toBeGreaterThan(100)
  await tracerProvider.shutdown()
})

/**
 * The twin on a BullMQ job attempt's span: its `handler` event was added when
 * bullmq announced the attempt's end, so a dark-mode attempt given 20 ms that
 * finished at +120 ms said its deadline ran out at +120 ms. Driven through
 * bullmq's documented channels, in the order its worker publishes them
 * (start, the run, the deadline disposed, end): a real redis-server would
 * cost this one-at-a-time file more than the test itself.
 */
describe('a job attempt’s handler-stage exceeded event is stamped when its deadline ran out, not at the attempt’s end', () => {
  const cases = [
    {
      what: 'dark mode, returned late (completed_late)',
      observe: true,
      outcome: 'completed_late',
      enforcedOutcome: undefined,
      action: 'observed',
    },
    {
      what: 'dark mode, failed after its deadline (enforcedOutcome deadline_exceeded)',
      observe: true,
      outcome: 'failed',
      enforcedOutcome: 'deadline_exceeded',
      action: 'observed',
    },
    {
      what: 'enforced, ignored its aborted signal and returned late (completed_late)',
      observe: false,
      outcome: 'completed_late',
      enforcedOutcome: undefined,
      action: 'completed',
    },
  ] as const
  it.each(cases)('$what', async ({ observe, outcome, enforcedOutcome, action }) => {
    const exporter = new InMemorySpanExporter()
    const tracerProvider = new BasicTracerProvider({
      spanProcessors: [new SimpleSpanProcessor(exporter)],
    })
    const stop = instrumentDeadlines({ tracerProvider })
    const about = { jobId: '1', queue: 'late', name: 'job', budgetMs: 20 }
    const deadline = Deadline.after(20, { observe })
    try {
      bullmqChannels.start.publish(() => ({ ...about, remainingMs: 20, deadline, attempt: 1 }))
      // The processor's work, which outlives its 20 ms.
      await new Promise((resolve) => setTimeout(resolve, 120))
      const elapsedMs = deadline.elapsed()
      deadline.dispose()
      bullmqChannels.end.publish(() => ({
        ...about,
        remainingMs: 0,
        deadline,
        attempt: 1,
        elapsedMs,
        outcome,
        ...(enforcedOutcome ? { enforcedOutcome } : {}),
        ...(outcome === 'failed' ? { error: new Error('boom') } : {}),
      }))
    } finally {
      deadline.dispose()
      stop()
    }
    const span = spanNamed(exporter.getFinishedSpans(), 'process late')
    expect(span.attributes['hourglass.deadline.outcome']).toBe(outcome)
    const start = hrTimeToMilliseconds(span.startTime)
    const end = hrTimeToMilliseconds(span.endTime)
    const events = span.events.filter((e) => e.name === 'hourglass.deadline.exceeded')
    expect(events.map((e) => e.attributes)).toEqual([
      expect.objectContaining({
        'hourglass.deadline.stage': 'handler',
        'hourglass.deadline.action': action,
      }),
    ])
    // 20 ms after the attempt began, long before its end.
    const ranOut = hrTimeToMilliseconds(events[0]?.time ?? [0, 0]) - start
    expect(ranOut).toBeGreaterThanOrEqual(19.5)
    expect(ranOut).toBeLessThan(25)
    expect(end - start).toBeGreaterThan(100)
    await tracerProvider.shutdown()
  })
})
