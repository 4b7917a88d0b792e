import { describe, expect, it } from 'vitest'
import { firstMember, retryAfterMs, saysDeadlineExpired } from '../src/index.js'

/** Header readers of downstream answers (Retry-After, x-deadline-expired, rate-limit fields): linear in the value. */
describe('OWS trimming of a field of many inner spaces', () => {
  it('takes linear time', () => {
    const value = `1${' '.repeat(16_000)}x`
    const started = performance.now()
    expect(firstMember(value)).toBe(value)
    expect(retryAfterMs(value, Date.now())).toBeUndefined()
    expect(saysDeadlineExpired(value)).toBe(false)
    // Before: ~100 ms each (~300 ms); after: under 1 ms.
    expect(performance.now() - started).toBeLessThan(50)
  })
  it('still strips SP and HTAB only', () => {
    expect(firstMember(' \t1 ,2')).toBe('1')
    expect(retryAfterMs(' 2 ', 0)).toBe(2000)
  })
})
