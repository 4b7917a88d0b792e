import { Deadline, ManualClock } from '@hourglass/core'
import { expect, it } from 'vitest'
import { OpenWork } from '../src/OpenWork.js'
import { useHeldSpans } from './helpers/heldSpans.js'

/**
 * Two instrumentations enabled at once (two `HourglassInstrumentation`s, or
 * one beside `instrumentDeadlines()`) each hold the same HTTP server span
 * while their own spans of a cut request end (`OpenWork.holdEnd`). Each
 * hears the end of the work in the order they subscribed, so the first to
 * hold is the first released: it put back the span's own `end()` over the
 * second one's hold, and the second, released next, put back the first's
 * hold — already spent — and called it. The span was never ended, never
 * exported, and kept a dead `end()` for good.
 */

const { exporter, tracer, held } = useHeldSpans('two-holds-one-span')

/** A request span held by two OpenWorks, each with one open child span of its own. */
const twiceHeld = () => held(2)

const exportedRequests = () => exporter.getFinishedSpans().filter((s) => s.name === 'request')

it.each([
  ['first', [0, 1]],
  ['last', [1, 0]],
] as const)(
  'released %s by the instrumentation that held it first: ended once, after both',
  (_order, [before, after]) => {
    const { span, endChild } = twiceHeld()
    span.end()
    endChild(before)
    expect(exportedRequests()).toHaveLength(0)
    endChild(after)
    expect(exportedRequests()).toHaveLength(1)
    expect(Object.hasOwn(span, 'end')).toBe(false)
  },
)

it('both released by the limit: ended once', () => {
  const { clock, span } = twiceHeld()
  span.end()
  clock.advance(1000)
  expect(exportedRequests()).toHaveLength(1)
  expect(Object.hasOwn(span, 'end')).toBe(false)
})

it('released before its owner ended it: not ended for it, and its own end() back', () => {
  const { span, endChild } = twiceHeld()
  endChild(0)
  endChild(1)
  expect(exportedRequests()).toHaveLength(0)
  expect(Object.hasOwn(span, 'end')).toBe(false)
  span.end()
  expect(exportedRequests()).toHaveLength(1)
})

/**
 * One instrumentation, two requests with the same span for theirs: a span
 * of yours open around the server's `listen()` (a `boot` span, a test's own)
 * is the span of every request that server takes (README, Limits). Two cut
 * at once each held it, and the first to finish put back `end()` over the
 * second's hold: the span was never ended.
 */
it('held for two requests by one instrumentation: ended once, after the work of both', () => {
  const clock = new ManualClock()
  const openWork = new OpenWork()
  const span = tracer.startSpan('request')
  const children = [0, 1].map(() => {
    const owner = Deadline.after(2000, { clock })
    openWork.own(owner)
    const child = tracer.startSpan('work')
    openWork.track(owner, child)
    openWork.holdEnd(owner, span)
    return child
  })
  span.end()
  for (const child of children) {
    child.end()
    openWork.untrack(child)
  }
  expect(exportedRequests()).toHaveLength(1)
  expect(Object.hasOwn(span, 'end')).toBe(false)
})
