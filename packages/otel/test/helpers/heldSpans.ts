import { Deadline, ManualClock } from '@hourglass/core'
import type { SpanOptions } from '@opentelemetry/api'
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base'
import { afterEach } from 'vitest'
import { OpenWork } from '../../src/OpenWork.js'

/**
 * A tracer exporting to memory (`exporter`, reset after each test), and
 * `held(holders)`: a `request` span held (`OpenWork.holdEnd`) by `holders`
 * OpenWorks, each owning one 2 s deadline on a clock the test moves, with
 * one open `work` span of its own. `endChild(i)` ends holder i's work span.
 */
export function useHeldSpans(tracerName: string) {
  const exporter = new InMemorySpanExporter()
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
  const tracer = provider.getTracer(tracerName)
  afterEach(() => exporter.reset())

  function held(holders: number, requestOptions?: SpanOptions) {
    const clock = new ManualClock()
    const owner = Deadline.after(2000, { clock })
    const span = tracer.startSpan('request', requestOptions)
    const holds = Array.from({ length: holders }, () => {
      const openWork = new OpenWork()
      openWork.own(owner)
      const child = tracer.startSpan('work')
      openWork.track(owner, child)
      return { openWork, child }
    })
    for (const { openWork } of holds) openWork.holdEnd(owner, span)
    const endChild = (i: number) => {
      const hold = holds[i]
      hold?.child.end()
      hold?.openWork.untrack(hold.child)
    }
    return { clock, span, endChild }
  }

  return { exporter, tracer, held }
}
