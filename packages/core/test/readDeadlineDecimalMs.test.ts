import { DEADLINE_HEADER, ENVOY_TIMEOUT_HEADER, readDeadline } from '@hourglass/core'
import { expect, it } from 'vitest'

// A client that sends `deadline - performance.now()` as it is writes
// `1499.7000000000007`; Python prints a float as `1500.0`. Refused as
// malformed, each fell back to the ingress's default budget: longer than
// the caller had (2 s or 30 s for 1.5 s), the one answer an untrusted value
// must never get. Rounded down, as grpc-timeout's u and n are.

it.each([
  ['1500.5', 1500],
  ['1500.0', 1500],
  ['1499.7000000000007', 1499],
  ['0.9', 0],
])(
  'reads a decimal x-deadline-remaining-ms %j as %i whole ms, rounded down, not as malformed',
  (value, ms) => {
    expect(readDeadline({ [DEADLINE_HEADER]: value })).toEqual({
      ms,
      source: DEADLINE_HEADER,
      clamped: false,
      invalid: [],
    })
  },
)

it('a decimal beside a smaller whole value: the smaller still wins', () => {
  const read = readDeadline({ [DEADLINE_HEADER]: '1500.5', 'grpc-timeout': '900m' })
  expect(read).toMatchObject({ ms: 900, source: 'grpc-timeout', invalid: [] })
})

it('a number value with a fraction reads as its whole ms, as its text does', () => {
  expect(readDeadline({ [DEADLINE_HEADER]: 1500.5 }).ms).toBe(1500)
  expect(readDeadline({ [DEADLINE_HEADER]: 1e-7 }).ms).toBe(0)
})

it("Envoy's 0 is still no timeout; a fraction of a ms under it is 0 ms left", () => {
  expect(readDeadline({ [ENVOY_TIMEOUT_HEADER]: '0' }).ms).toBeUndefined()
  expect(readDeadline({ [ENVOY_TIMEOUT_HEADER]: '0.5' }).ms).toBe(0)
  expect(readDeadline({ [ENVOY_TIMEOUT_HEADER]: '250.9' }).ms).toBe(250)
})

it('what is no decimal number is still refused', () => {
  for (const value of ['.5', '1.', '1.5e3', '1.5.5', '1,5']) {
    expect(readDeadline({ [DEADLINE_HEADER]: value }).ms).toBeUndefined()
  }
})
