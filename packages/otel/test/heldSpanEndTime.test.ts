import { hrTimeToMilliseconds } from '@opentelemetry/core'
import { expect, it } from 'vitest'
import { useHeldSpans } from './helpers/heldSpans.js'

/**
 * A server span held while its work's spans end (`OpenWork.holdEnd`) keeps
 * the end time it was ended with: the hold took no argument and ended the
 * span with none once released, so a span ended as `end(endTime)` was
 * exported ending when its work did.
 */

const { exporter, held } = useHeldSpans('held-span-end-time')

/** A request span held by one open child span, on a clock the test moves. */
function heldRequest() {
  const { clock, span, endChild } = held(1, { startTime: 1_000_000 })
  return { clock, span, endChild: () => endChild(0) }
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
