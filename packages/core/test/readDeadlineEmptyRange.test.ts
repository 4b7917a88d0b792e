import { readDeadline } from '@hourglass/core'
import { expect, it } from 'vitest'

// A range readDeadline cannot clamp into is a caller's bug, refused when
// given as a NaN cap is: else every inbound budget came back 0 ms (a negative
// maxMs) or below the floor asked for (minMs above maxMs), without a word.

const headers = { 'x-deadline-remaining-ms': '100' }

it('a negative maxMs or minMs is a RangeError naming it', () => {
  expect(() => readDeadline(headers, { maxMs: -1 })).toThrow(
    new RangeError('readDeadline: maxMs must be a number of ms ≥ 0, got -1'),
  )
  expect(() => readDeadline(headers, { maxMs: -1 })).toThrow(RangeError)
  expect(() => readDeadline(headers, { minMs: -5 })).toThrow(
    new RangeError('readDeadline: minMs must be a number of ms ≥ 0, got -5'),
  )
})

it('a minMs above the maxMs given is a RangeError naming both', () => {
  expect(() => readDeadline(headers, { minMs: 500, maxMs: 100 })).toThrow(
    new RangeError('readDeadline: minMs (500) must not be more than maxMs (100)'),
  )
  expect(() => readDeadline(headers, { minMs: 500, maxMs: 100 })).toThrow(RangeError)
})

it('the edges of a valid range still read: 0, and minMs equal to maxMs', () => {
  expect(readDeadline(headers, { maxMs: 0 })).toMatchObject({ ms: 0, clamped: true })
  expect(readDeadline(headers, { minMs: 0 })).toMatchObject({ ms: 100, clamped: false })
  expect(readDeadline(headers, { minMs: 50, maxMs: 50 })).toMatchObject({ ms: 50, clamped: true })
  // Only minMs given: a floor above the default cap raises the cap (as documented).
  expect(readDeadline(headers, { minMs: 60_000 }).ms).toBe(60_000)
})
