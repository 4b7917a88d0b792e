import { getEventListeners } from 'node:events'
import { Deadline, ManualClock } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { Attempt } from '../src/Attempt.js'

const limits = { dnsTimeoutMs: 0, connectTimeoutMs: 0, headersTimeoutMs: 0, bodyTimeoutMs: 0 }

function attemptUnder(deadline: Deadline, signal: AbortSignal): Attempt {
  return new Attempt({
    deadline,
    signal,
    limits,
    clock: deadline.clock,
    method: 'GET',
    url: 'http://x/',
    number: 1,
  })
}

describe('Attempt', () => {
  it('created under a deadline that has already ended, is done at once and leaves no listener on the caller’s signal', () => {
    const clock = new ManualClock()
    const controller = new AbortController()
    const expired = Deadline.after(0, { clock })
    const cancelled = Deadline.after(1000, { clock })
    cancelled.cancel(new Error('gone'))
    for (const deadline of [expired, cancelled]) {
      const attempt = attemptUnder(deadline, controller.signal)
      expect(attempt.done).toBe(true)
      expect(attempt.reason).toBe(deadline.reason)
    }
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0)
    expect(clock.pendingTimers).toBe(0)
  })

  it('created with a caller signal that has already aborted, is done at once with its reason', () => {
    const clock = new ManualClock()
    const deadline = Deadline.after(1000, { clock })
    const signal = AbortSignal.abort(new Error('left'))
    const attempt = attemptUnder(deadline, signal)
    expect(attempt.done).toBe(true)
    expect((attempt.reason as Error).message).toBe('left')
    expect(getEventListeners(signal, 'abort')).toHaveLength(0)
  })

  it('a live attempt holds one listener on the signal and releases it when it finishes', () => {
    const clock = new ManualClock()
    const controller = new AbortController()
    const attempt = attemptUnder(Deadline.after(1000, { clock }), controller.signal)
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1)
    attempt.finish()
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0)
  })
})
