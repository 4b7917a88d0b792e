import { Deadline, ManualClock } from '@hourglass/core'
import { hrTimeToMilliseconds } from '@opentelemetry/core'
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base'
import { afterEach, expect, it } from 'vitest'
import { OpenWork } from '../src/OpenWork.js'

/**
 * A server span held while its work's spans end (`OpenWork.holdEnd`) keeps
 * the end time it was ended with: the hold took no argument and ended the
 * span with none once released, so a span ended as `end(endTime)` was
 * exported ending when its work did.
 */

const exporter = new InMemorySpanExporter()
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
const tracer = provider.getTracer('held-span-end-time')
afterEach(() => exporter.reset())

/** A request span held by one open child span, on a clock the test moves. */
function heldRequest() {
  const clock = new ManualClock()
  const owner = Deadline.after(2000, { clock })
  const openWork = new OpenWork()
  openWork.own(owner)
  const child = tracer.startSpan('work')
  openWork.track(owner, child)
  const span = tracer.startSpan('request', { startTime: 1_000_000 })
  openWork.holdEnd(owner, span)
  const endChild = () => {
    child.end()
    openWork.untrack(child)
  }
  return { clock, span, endChild }
}

const exported = (name: string) => exporter.getFinishedSpans().find((s) => s.name === name)

it('ended with an end time while its work runs: exported with that end time once the work ends', () => {
  const { span, endChild } = heldRequest()
  span.end(1_000_250)
  expect(exported('request')).toBeUndefined()
  endChild()
  expect(hrTimeToMilliseconds(exported('request')?.endTime ?? [0, 0])).toBe(1_000_250)
})

it('released by the limit: still the end time it was ended with', () => {
  const { clock, span } = heldRequest()
  span.end(1_000_400)
  clock.advance(1000)
  expect(hrTimeToMilliseconds(exported('request')?.endTime ?? [0, 0])).toBe(1_000_400)
})

it('ended twice while held: the first end time, as an ended span keeps it', () => {
  const { span, endChild } = heldRequest()
  span.end(1_000_100)
  span.end(1_000_900)
  endChild()
  expect(hrTimeToMilliseconds(exported('request')?.endTime ?? [0, 0])).toBe(1_000_100)
})
