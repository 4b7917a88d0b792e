import { Deadline, ManualClock } from '@hourglass/core'
import { HourglassInstrumentation, instrumentDeadlines } from '@hourglass/otel'
import { trace } from '@opentelemetry/api'
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base'
import { afterEach, describe, expect, it } from 'vitest'

/**
 * Without a tracer provider of its own, spans go to "the global one, looked
 * up lazily, so an SDK registered after this call is still used". The global
 * tracer provider is a proxy, and `trace.disable()` — which OpenTelemetry
 * asks for before a second SDK is registered in the same process (a test
 * suite, an in-process restart) — replaces it: the proxy read when the
 * instrumentation was made kept following the first SDK, shut down, and
 * every later span was lost without a word.
 */

function sdk() {
  const exporter = new InMemorySpanExporter()
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
  return { exporter, provider }
}

function oneSlice(): void {
  const deadline = Deadline.after(1500, { clock: new ManualClock() })
  deadline.plan({ work: 1 }).slice('work').dispose()
  deadline.dispose()
}

const stops: Array<() => void> = []
afterEach(() => {
  for (const stop of stops.splice(0)) stop()
  trace.disable()
})

describe('the global tracer provider, followed after trace.disable()', () => {
  it('instrumentDeadlines() sends spans to an SDK registered after an in-process restart', async () => {
    stops.push(instrumentDeadlines())
    const first = sdk()
    trace.setGlobalTracerProvider(first.provider)
    oneSlice()
    expect(first.exporter.getFinishedSpans().map((s) => s.name)).toEqual(['deadline.slice work'])

    first.exporter.reset()
    trace.disable()
    const second = sdk()
    expect(trace.setGlobalTracerProvider(second.provider)).toBe(true)
    oneSlice()
    expect(second.exporter.getFinishedSpans().map((s) => s.name)).toEqual(['deadline.slice work'])
    expect(first.exporter.getFinishedSpans()).toEqual([])
  })

  it('so does a HourglassInstrumentation given no tracer provider', async () => {
    const instrumentation = new HourglassInstrumentation()
    stops.push(() => instrumentation.disable())
    const first = sdk()
    trace.setGlobalTracerProvider(first.provider)
    trace.disable()
    const second = sdk()
    trace.setGlobalTracerProvider(second.provider)
    oneSlice()
    expect(second.exporter.getFinishedSpans().map((s) => s.name)).toEqual(['deadline.slice work'])
  })

  it('a provider given explicitly is kept, whatever the global one becomes', async () => {
    const own = sdk()
    stops.push(instrumentDeadlines({ tracerProvider: own.provider }))
    const global = sdk()
    trace.setGlobalTracerProvider(global.provider)
    oneSlice()
    expect(own.exporter.getFinishedSpans().map((s) => s.name)).toEqual(['deadline.slice work'])
    expect(global.exporter.getFinishedSpans()).toEqual([])
  })
})
