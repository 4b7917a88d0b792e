import { Deadline } from '@hourglass/core'
import { instrumentDeadlines } from '@hourglass/otel'
import { hrTimeToMilliseconds } from '@opentelemetry/core'
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base'
import { expect, it } from 'vitest'
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
