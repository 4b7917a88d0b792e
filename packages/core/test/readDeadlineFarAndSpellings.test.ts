import { DEFAULT_INGRESS_MAX_MS, MAX_TIMER_MS, readDeadline } from '@hourglass/core'
import { describe, expect, it } from 'vitest'

// A well-formed value past 2^31-1 ms was listed invalid, so the ingress fell
// back to its defaultMs: a caller with a LONGER deadline (grpc-js sends
// `2592000S` for 30 days) got a SHORTER budget, or a 400 in strict mode.
describe('readDeadline: a well-formed value past 2^31-1 ms', () => {
  it.each([
    ['grpc-timeout', '2592000S'],
    ['grpc-timeout', '720H'],
    ['grpc-timeout', '99999999H'],
    ['x-deadline-remaining-ms', '2147483648'],
    ['x-deadline-remaining-ms', '9999999999'],
    ['x-envoy-expected-rq-timeout-ms', '3000000000'],
  ])('%s: %s is valid, clamped to maxMs', (header, value) => {
    expect(readDeadline({ [header]: value }, { maxMs: 30_000 })).toEqual({
      ms: 30_000,
      source: header,
      clamped: true,
      invalid: [],
    })
    // No maxMs: the ingress default (an inbound budget is untrusted); a
    // caller that allows the most gets the timer's limit.
    expect(readDeadline({ [header]: value }).ms).toBe(DEFAULT_INGRESS_MAX_MS)
    expect(readDeadline({ [header]: value }, { maxMs: MAX_TIMER_MS }).ms).toBe(MAX_TIMER_MS)
  })

  it('x-stainless-timeout past it too (when trusted), and a shorter header still wins', () => {
    const sources = ['x-stainless-timeout', 'grpc-timeout'] as const
    expect(readDeadline({ 'x-stainless-timeout': '2147484' }, { sources, maxMs: 60_000 })).toEqual({
      ms: 60_000,
      source: 'x-stainless-timeout',
      clamped: true,
      invalid: [],
    })
    const both = readDeadline(
      { 'x-stainless-timeout': '9999999', 'grpc-timeout': '5S' },
      { sources, maxMs: 60_000 },
    )
    expect(both).toEqual({ ms: 5000, source: 'grpc-timeout', clamped: false, invalid: [] })
  })
})

// The README: names match in any letter case, a Map too. A Map was read with
// get(lower-case name) only, and a record with two spellings of one header
// was read by its lower-case one alone.
describe('readDeadline: names in any letter case', () => {
  it('reads a Map whose keys are not lower case', () => {
    const headers = new Map([
      ['X-Deadline-Remaining-Ms', '100'],
      ['Grpc-Timeout', '1S'],
    ])
    expect(readDeadline(headers)).toEqual({
      ms: 100,
      source: 'x-deadline-remaining-ms',
      clamped: false,
      invalid: [],
    })
    // lowerCaseNames says the keys are lower case: looked up, not matched.
    expect(readDeadline(headers, { lowerCaseNames: true }).ms).toBeUndefined()
  })

  it.each([
    ['a record', { 'X-Deadline-Remaining-Ms': '5', 'x-deadline-remaining-ms': '1000' }],
    [
      'a record, lower case first',
      { 'x-deadline-remaining-ms': '1000', 'X-DEADLINE-REMAINING-MS': '5' },
    ],
    [
      'a Map',
      new Map([
        ['x-deadline-remaining-ms', '1000'],
        ['X-Deadline-Remaining-Ms', '5'],
      ]),
    ],
  ])(
    'takes two spellings in %s as the header sent twice, never one of them alone',
    (_, headers) => {
      const result = readDeadline(headers)
      expect(result.ms).toBeUndefined()
      expect(result.invalid).toEqual([
        {
          header: 'x-deadline-remaining-ms',
          value: expect.stringMatching(/^(1000, 5|5, 1000)$/),
          reason: 'repeated header',
        },
      ])
    },
  )

  it('one spelling in another case among other headers is read as before', () => {
    expect(
      readDeadline({ Host: 'a', 'GRPC-TIMEOUT': '2S', 'x-deadline-remaining-ms': '3000' }),
    ).toEqual({ ms: 2000, source: 'grpc-timeout', clamped: false, invalid: [] })
  })
})

it('with only minMs given, a floor above the default cap is kept: values below it are raised to it', () => {
  // Before the default cap was 30 s this held by accident; with it, the floor
  // was cut to the cap without a word (60 s asked, 30 s given).
  expect(readDeadline({ 'x-deadline-remaining-ms': '45000' }, { minMs: 60_000 })).toMatchObject({
    ms: 60_000,
    clamped: true,
  })
  expect(readDeadline({ 'x-deadline-remaining-ms': '45000' }).ms).toBe(DEFAULT_INGRESS_MAX_MS)
})
