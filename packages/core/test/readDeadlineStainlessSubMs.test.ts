import { describe, expect, it } from 'vitest'
import { readDeadline } from '../src/index.js'

// x-stainless-timeout's decimal value is exact, its digits below a ms rounded
// down: a 0.4 ms timeout is 0 ms left, as Envoy's `0.4` is. Read as "no
// deadline", it got the ingress's whole default budget, where the longer
// `0.001` got 1 ms.
describe('x-stainless-timeout below a millisecond', () => {
  const sources = ['x-stainless-timeout'] as const
  const read = (value: string) => readDeadline({ 'x-stainless-timeout': value }, { sources })

  it('a decimal under 1 ms is 0 ms left, not no deadline', () => {
    for (const value of ['0.0004', '0.0009', '0.0000001']) {
      expect(read(value)).toEqual({
        ms: 0,
        source: 'x-stainless-timeout',
        clamped: false,
        invalid: [],
      })
    }
  })

  it('0 itself, whole or with zero decimals, is still no deadline', () => {
    for (const value of ['0', '0.0', '0.000', '0.0000']) {
      expect(read(value)).toEqual({ ms: undefined, source: undefined, clamped: false, invalid: [] })
    }
  })

  it('a shorter timeout never gets a longer budget than a longer one', () => {
    expect(read('0.0004').ms).toBeLessThanOrEqual(read('0.001').ms as number)
  })

  it('the smallest value wins against another header, as Envoy 0.4 does', () => {
    expect(
      readDeadline(
        { 'x-stainless-timeout': '0.0004', 'x-deadline-remaining-ms': '800' },
        { sources: ['x-stainless-timeout', 'x-deadline-remaining-ms'] },
      ),
    ).toMatchObject({ ms: 0, source: 'x-stainless-timeout' })
  })
})
