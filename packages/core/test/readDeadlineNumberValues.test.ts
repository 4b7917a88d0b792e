import { DEADLINE_HEADER, readDeadline, STAINLESS_TIMEOUT_HEADER } from '@hourglass/core'
import { expect, it } from 'vitest'

// A record (or Map) may hold a number where a header value belongs, as the
// HeaderSource type allows (`res.getHeaders()`, headers built in code). It
// was read through String(): 4e9 is '4000000000', a far deadline clamped to
// maxMs, but 1e21 is '1e+21' — refused as 'not a number', the ingress fell
// back to its default budget, though the same value sent as digits is
// clamped. And a one-value array holding a number ([500]) was refused as a
// 'repeated header', where ['500'] reads 500.

it('reads a whole number too big for plain notation as the far deadline it is', () => {
  for (const value of [1e21, 1e300, Number.MAX_VALUE]) {
    expect(readDeadline({ [DEADLINE_HEADER]: value })).toEqual({
      ms: 30_000,
      source: DEADLINE_HEADER,
      clamped: true,
      invalid: [],
    })
  }
  expect(readDeadline(new Map([[DEADLINE_HEADER, 1e21]]))).toMatchObject({
    ms: 30_000,
    clamped: true,
  })
  expect(
    readDeadline({ [STAINLESS_TIMEOUT_HEADER]: 1e21 }, { sources: [STAINLESS_TIMEOUT_HEADER] }),
  ).toMatchObject({ ms: 30_000, clamped: true, invalid: [] })
})

it('reads a one-value array holding a number as that value, as one holding a string', () => {
  expect(readDeadline({ [DEADLINE_HEADER]: [500] as never })).toEqual({
    ms: 500,
    source: DEADLINE_HEADER,
    clamped: false,
    invalid: [],
  })
  expect(readDeadline({ [DEADLINE_HEADER]: [500, 600] as never }).invalid).toEqual([
    { header: DEADLINE_HEADER, value: '500, 600', reason: 'repeated header' },
  ])
})

it('reads a negative number as a deadline past (0 ms left) and refuses the numbers no header could carry', () => {
  expect(readDeadline({ [DEADLINE_HEADER]: -1e21 }).ms).toBe(0)
  expect(readDeadline({ [DEADLINE_HEADER]: -1.5 }).ms).toBe(0)
  expect(readDeadline({ [DEADLINE_HEADER]: Number.NEGATIVE_INFINITY }).invalid[0]?.reason).toBe(
    'not a number',
  )
  expect(readDeadline({ [DEADLINE_HEADER]: Number.NaN }).invalid[0]?.reason).toBe('not a number')
  expect(readDeadline({ [DEADLINE_HEADER]: Number.POSITIVE_INFINITY }).invalid[0]?.reason).toBe(
    'not a number',
  )
})

it('reads a fraction as its decimal text: Envoy 0.5 is 0 ms left, a 1.5 s stainless timeout 1500 ms', () => {
  // Rounded to whole ms first, 0.5 read as Envoy's 0 ("no timeout") and
  // 1.5 s as whole seconds (1999 ms), where the same text reads otherwise.
  expect(readDeadline({ 'x-envoy-expected-rq-timeout-ms': 0.5 }).ms).toBe(0)
  expect(readDeadline({ 'x-envoy-expected-rq-timeout-ms': '0.5' }).ms).toBe(0)
  const stainless = { sources: ['x-stainless-timeout' as const] }
  // The ms a caller gets, and the same as its text reads (a relative check
  // alone would pass if both read wrong alike).
  expect(readDeadline({ 'x-stainless-timeout': 1.5 }, stainless).ms).toBe(1500)
  expect(readDeadline({ 'x-stainless-timeout': '1.5' }, stainless).ms).toBe(1500)
  // The shortest text that reads back as the number: 0.3 s is 300 ms, not 299.
  for (const [seconds, ms] of [
    [0.3, 300],
    [2.3, 2300],
    [4.35, 4350],
    [1.005, 1005],
  ] as const) {
    expect(readDeadline({ 'x-stainless-timeout': seconds }, stainless).ms, `${seconds}`).toBe(ms)
    expect(readDeadline({ 'x-stainless-timeout': String(seconds) }, stainless).ms).toBe(ms)
  }
  expect(readDeadline({ [DEADLINE_HEADER]: 1e-7 }).ms).toBe(0)
  expect(readDeadline({ [DEADLINE_HEADER]: 1500.9 }).ms).toBe(1500)
})
