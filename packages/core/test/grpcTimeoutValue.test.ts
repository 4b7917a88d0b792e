import { describe, expect, it } from 'vitest'
import { grpcTimeoutValue, readDeadline } from '../src/index.js'

describe('grpcTimeoutValue', () => {
  it('writes milliseconds below 10^8 ms, whole seconds rounded down from there: at most 8 digits', () => {
    expect(grpcTimeoutValue(0)).toBe('0m')
    expect(grpcTimeoutValue(1500)).toBe('1500m')
    expect(grpcTimeoutValue(99_999_999)).toBe('99999999m')
    expect(grpcTimeoutValue(100_000_000)).toBe('100000S')
    expect(grpcTimeoutValue(123_456_789)).toBe('123456S')
  })

  it('writes only whole ms, none below 0: a fraction, a negative or NaN is still a valid value', () => {
    expect(grpcTimeoutValue(1.9)).toBe('1m')
    expect(grpcTimeoutValue(-5)).toBe('0m')
    expect(grpcTimeoutValue(Number.NaN)).toBe('0m')
    expect(grpcTimeoutValue(Number.POSITIVE_INFINITY)).toBe('2147483S')
  })

  it('caps at 2^31-1 ms, and readDeadline reads each value back as no more than was given', () => {
    expect(grpcTimeoutValue(1e15)).toBe('2147483S')
    for (const ms of [1, 1500, 99_999_999, 100_000_999, 2 ** 31 - 1]) {
      const read = readDeadline(
        { 'grpc-timeout': grpcTimeoutValue(ms) },
        { sources: ['grpc-timeout'], maxMs: 2 ** 31 - 1 },
      )
      expect(read.ms).toBeLessThanOrEqual(ms)
      expect(read.ms).toBeGreaterThan(ms - 1000)
    }
  })
})
