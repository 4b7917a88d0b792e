import { Deadline, ManualClock } from '@hourglass/core'
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base'
import { expect, it, vi } from 'vitest'

// Two copies of this package in one process (a harness's and an SDK's) each
// holding the same server span: with a hold registry per copy, the second
// took the first's replacement for the span's own `end()` and put it back
// last — the span was never ended. The registry is one per process.

it('two copies of the package share one hold per span: the span ends once, its own end() back', async () => {
  const one = await import('../src/OpenWork.js')
  vi.resetModules()
  const two = await import('../src/OpenWork.js')
  expect(two.OpenWork).not.toBe(one.OpenWork)
  const exporter = new InMemorySpanExporter()
  const tracer = new BasicTracerProvider({
    spanProcessors: [new SimpleSpanProcessor(exporter)],
  }).getTracer('two-copies')
  const owner = Deadline.after(2000, { clock: new ManualClock() })
  const span = tracer.startSpan('request')
  const holds = [new one.OpenWork(), new two.OpenWork()].map((work) => {
    work.own(owner)
    const child = tracer.startSpan('work')
    work.track(owner, child)
    return { work, child }
  })
  for (const { work } of holds) work.holdEnd(owner, span)
  span.end()
  for (const { work, child } of holds) {
    child.end()
    work.untrack(child)
  }
  expect(exporter.getFinishedSpans().filter((s) => s.name === 'request')).toHaveLength(1)
  expect(Object.hasOwn(span, 'end')).toBe(false)
  owner.dispose()
})
