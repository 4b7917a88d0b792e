import { describe, expect, it } from 'vitest'
import { deadlineServerInterceptor } from '../src/index.js'

/**
 * The option errors core raises for the server interceptor (shared with
 * Express's `deadline()`) are gRPC's: they name the interceptor, as its
 * unknown-option error does, and speak of `DEADLINE_EXCEEDED` and calls —
 * not of a 504 and deadline headers, which a gRPC server has neither of.
 */
describe('deadlineServerInterceptor: its option errors', () => {
  const messageOf = (options: Parameters<typeof deadlineServerInterceptor>[0]) => {
    try {
      deadlineServerInterceptor(options)
    } catch (error) {
      return (error as Error).message
    }
    return 'no error'
  }

  it.each([
    [{ defaultMs: 10 }, 'every unary or client-streaming call without a deadline'],
    [{ maxMs: 10 }, 'every call'],
    [{ maxMs: 40, reserveMs: 50 }, 'every call'],
    [{ defaultMs: 40, reserveMs: 40 }, 'every unary or client-streaming call without a deadline'],
  ])('%o names the interceptor and its refusal in gRPC’s words', (options, who) => {
    const message = messageOf(options)
    expect(message).toMatch(/^deadlineServerInterceptor: /)
    expect(message).toContain(`${who} would be answered DEADLINE_EXCEEDED on arrival`)
    expect(message).not.toMatch(/504|header/)
  })

  it('prefixes its other option errors too', () => {
    expect(messageOf({ reserveMs: -1 })).toBe(
      'deadlineServerInterceptor: reserveMs must be a finite number ≥ 0, got -1',
    )
  })
})
