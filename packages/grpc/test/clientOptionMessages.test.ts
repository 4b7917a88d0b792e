import { MAX_TIMER_MS } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { deadlineInterceptor } from '../src/index.js'

/**
 * The client interceptor's option errors name it, as the server
 * interceptor's (`deadlineServerInterceptor: `) and its own unknown-option
 * error do: "reserveMs must be …" alone did not say whose reserveMs, in an
 * app that configures an ingress and several clients from one config.
 */
describe('deadlineInterceptor: its option errors', () => {
  const messageOf = (options: Parameters<typeof deadlineInterceptor>[0]) => {
    try {
      deadlineInterceptor(options)
    } catch (error) {
      return (error as Error).message
    }
    return 'no error'
  }

  it.each([
    [{ reserveMs: Number.NaN }, /^deadlineInterceptor: reserveMs must be .*, got NaN$/],
    [{ minBudgetMs: -1 }, /^deadlineInterceptor: minBudgetMs must be .*, got -1$/],
    [{ defaultMs: 0 }, /^deadlineInterceptor: defaultMs must be .*, got 0$/],
  ])('%o names the interceptor', (options, message) => {
    expect(messageOf(options)).toMatch(message)
  })

  // A timestamp where a duration belongs (`Date.now()`, ~1.8e12) was
  // accepted: every call under a deadline then failed DEADLINE_EXCEEDED
  // unsent, at run time, never at boot. No deadline gRPC carries is longer
  // than 2³¹−1 ms (the ingress's `maxMs` is cut to it, as is our own
  // `grpc-timeout`), so a reserve or a minimum budget that large is the
  // outage `deadline()` refuses for a `reserveMs` not under its budget.
  it.each([
    { reserveMs: 1e12 },
    { minBudgetMs: 1e12 },
    { reserveMs: MAX_TIMER_MS },
    { minBudgetMs: MAX_TIMER_MS },
    { reserveMs: Number.POSITIVE_INFINITY },
  ])('%o, at or past the longest deadline gRPC carries, is a RangeError at creation', (options) => {
    expect(() => deadlineInterceptor(options)).toThrow(RangeError)
    expect(messageOf(options)).toMatch(/^deadlineInterceptor: (reserveMs|minBudgetMs) must be /)
    expect(messageOf(options)).toContain(String(MAX_TIMER_MS))
  })

  it('refuses a reserve and a minimum budget that together leave no deadline enough', () => {
    const half = Math.ceil(MAX_TIMER_MS / 2)
    expect(() => deadlineInterceptor({ reserveMs: half, minBudgetMs: half })).toThrow(RangeError)
    expect(messageOf({ reserveMs: half, minBudgetMs: half })).toBe(
      `deadlineInterceptor: reserveMs (${half}) + minBudgetMs (${half}) must be less than ${MAX_TIMER_MS} ms (2³¹−1, the longest deadline gRPC carries): every call under a deadline would fail DEADLINE_EXCEEDED unsent`,
    )
  })

  it('accepts large but possible values', () => {
    expect(() => deadlineInterceptor({ reserveMs: 60_000, minBudgetMs: 3_600_000 })).not.toThrow()
    expect(() => deadlineInterceptor({ reserveMs: MAX_TIMER_MS - 2, minBudgetMs: 1 })).not.toThrow()
    expect(() => deadlineInterceptor({ reserveMs: 0, minBudgetMs: 0 })).not.toThrow()
  })
})
