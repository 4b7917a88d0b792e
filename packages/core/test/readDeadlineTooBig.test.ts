import { DEFAULT_INGRESS_MAX_MS, MAX_TIMER_MS, readDeadline } from '@hourglass/core'
import { describe, expect, it } from 'vitest'

// One rule for a value too big: a well-formed value is a caller's deadline
// however many digits it has, clamped to maxMs (`clamped: true`). Its length
// decided before: `4000000000` was clamped to maxMs, `99999999999` refused as
// 'too long' — the ingress then fell back to its default budget (or answered
// 400 in strict mode), for a caller with the LONGER deadline.
describe('readDeadline: a value too big is clamped, whatever its length', () => {
  const far = ['4000000000', '99999999999', '000000000000000000042000', '9'.repeat(400)]

  it.each(['x-deadline-remaining-ms', 'x-envoy-expected-rq-timeout-ms'] as const)(
    '%s: every far value is maxMs, clamped, never invalid',
    (header) => {
      for (const value of far.slice(0, 2).concat(far[3] as string)) {
        expect(readDeadline({ [header]: value }, { maxMs: 30_000 })).toEqual({
          ms: 30_000,
          source: header,
          clamped: true,
          invalid: [],
        })
        expect(readDeadline({ [header]: value }).ms).toBe(DEFAULT_INGRESS_MAX_MS)
        // No cap of the caller's own: the wire's limit, 2^31-1 ms.
        expect(readDeadline({ [header]: value }, { maxMs: Infinity })).toMatchObject({
          ms: MAX_TIMER_MS,
          clamped: true,
        })
      }
      // Leading zeros are digits too: the value is what they spell.
      expect(readDeadline({ [header]: far[2] as string }, { maxMs: 60_000 })).toMatchObject({
        ms: 42_000,
        clamped: false,
      })
    },
  )

  it('x-stainless-timeout: whole seconds of any length, decimals past the ms rounded down', () => {
    const sources = ['x-stainless-timeout'] as const
    const read = (value: string) => readDeadline({ 'x-stainless-timeout': value }, { sources })
    for (const value of ['9999999', '99999999', '9'.repeat(400), '99999999.5']) {
      expect(read(value)).toEqual({
        ms: DEFAULT_INGRESS_MAX_MS,
        source: 'x-stainless-timeout',
        clamped: true,
        invalid: [],
      })
    }
    // A float as a language prints it: not 'too long'.
    expect(read('1.2345')).toMatchObject({ ms: 1234, clamped: false, invalid: [] })
    expect(read('0.3333333333333333')).toMatchObject({ ms: 333, invalid: [] })
    // Under a millisecond rounds down to 0 ms left: a decimal is exact (`0`,
    // a whole-seconds SDK's timeout under a second, is no deadline; see
    // readDeadlineStainlessSubMs.test.ts).
    expect(read('0.0004')).toEqual({
      ms: 0,
      source: 'x-stainless-timeout',
      clamped: false,
      invalid: [],
    })
  })

  it('grpc-timeout keeps its grammar: at most 8 digits (a format rule, not a size)', () => {
    expect(readDeadline({ 'grpc-timeout': '99999999H' })).toMatchObject({
      ms: DEFAULT_INGRESS_MAX_MS,
      clamped: true,
    })
    expect(readDeadline({ 'grpc-timeout': '000000001S' }).invalid).toEqual([
      { header: 'grpc-timeout', value: '000000001S', reason: 'more than 8 digits' },
    ])
  })
})

// Nothing on the wire means more than 2^31-1 ms: bounds above it are that
// limit (Infinity included, "no cap of mine"), and the result says so.
describe('readDeadline: maxMs and minMs past 2^31-1 ms', () => {
  const header = { 'x-deadline-remaining-ms': '3000000000' }

  it('a maxMs above the limit reads as the limit: ms is what the caller gets', () => {
    for (const maxMs of [5e9, Infinity, MAX_TIMER_MS]) {
      expect(readDeadline(header, { maxMs })).toEqual({
        ms: MAX_TIMER_MS,
        source: 'x-deadline-remaining-ms',
        clamped: true,
        invalid: [],
      })
    }
    expect(
      readDeadline({ 'x-deadline-remaining-ms': String(MAX_TIMER_MS) }, { maxMs: 5e9 }),
    ).toMatchObject({ ms: MAX_TIMER_MS, clamped: false })
  })

  it('a minMs above the limit raises every value to the limit, and says so', () => {
    expect(readDeadline({ 'x-deadline-remaining-ms': '5' }, { minMs: 3e9 })).toMatchObject({
      ms: MAX_TIMER_MS,
      clamped: true,
    })
  })

  it('a minMs above the maxMs given is refused as given, not once both are cut to the limit', () => {
    // Both cut to 2^31-1 first, the empty range [4e9, 3e9] passed the check.
    expect(() => readDeadline(header, { minMs: 4e9, maxMs: 3e9 })).toThrow(
      /minMs \(4000000000\) must not be more than maxMs \(3000000000\)/,
    )
    expect(() => readDeadline(header, { minMs: Infinity, maxMs: 3e9 })).toThrow(RangeError)
    expect(readDeadline(header, { minMs: 3e9, maxMs: Infinity }).ms).toBe(MAX_TIMER_MS)
  })
})
