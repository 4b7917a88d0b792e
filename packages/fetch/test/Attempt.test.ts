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

  // A body phase whose limit (400) is longer than the time left (300) is left
  // to the deadline. Disposed mid-body, that deadline bounds nothing: the
  // limit takes over, as under no deadline — for a body that keeps flowing
  // too, whose chunks must keep re-arming it.
  describe('a phase left to the deadline, once the deadline is disposed', () => {
    const bodyLimited = { ...limits, bodyTimeoutMs: 400 }
    const inBody = (deadline: Deadline) => {
      const attempt = new Attempt({
        deadline,
        signal: undefined,
        limits: bodyLimited,
        clock: deadline.clock,
        method: 'GET',
        url: 'http://x/',
        number: 1,
      })
      attempt.enter('body')
      return attempt
    }

    it('a silent body fails at its own limit', () => {
      const clock = new ManualClock()
      const deadline = Deadline.after(300, { clock })
      const attempt = inBody(deadline)
      deadline.dispose()
      clock.advance(400)
      expect(attempt.done).toBe(true)
      expect(attempt.reason).toMatchObject({ code: 'BODY_TIMEOUT', limitMs: 400 })
    })

    it('a body still flowing is not cut: each chunk re-arms the limit', () => {
      const clock = new ManualClock()
      const deadline = Deadline.after(300, { clock })
      const attempt = inBody(deadline)
      deadline.dispose()
      for (let i = 0; i < 4; i++) {
        clock.advance(300)
        attempt.chunk(10)
      }
      expect(attempt.done).toBe(false)
      clock.advance(400)
      expect(attempt.reason).toMatchObject({ code: 'BODY_TIMEOUT' })
    })

    it('the headers limit counts from the last piece of the request sent, as under no deadline', () => {
      const clock = new ManualClock()
      const deadline = Deadline.after(300, { clock })
      const attempt = new Attempt({
        deadline,
        signal: undefined,
        limits: { ...limits, headersTimeoutMs: 400 },
        clock,
        method: 'PUT',
        url: 'http://x/',
        number: 1,
      })
      attempt.enter('headers')
      clock.advance(100)
      attempt.sending() // the upload's last piece, at 100
      deadline.dispose()
      clock.advance(300)
      expect(attempt.done).toBe(false)
      clock.advance(100)
      expect(attempt.reason).toMatchObject({ code: 'HEADERS_TIMEOUT', limitMs: 400 })
    })

    it('nor one whose reader paused and resumed after the dispose', () => {
      const clock = new ManualClock()
      const deadline = Deadline.after(300, { clock })
      const attempt = inBody(deadline)
      deadline.dispose()
      attempt.pauseBody(true)
      attempt.pauseBody(false)
      clock.advance(300)
      attempt.chunk(10)
      clock.advance(300) // 600 after the resume, 300 after the last chunk
      expect(attempt.done).toBe(false)
      attempt.finish()
      expect(clock.pendingTimers).toBe(0)
    })

    // Express disposes the request's deadline as its response ends: on a
    // busy loop that can be after its time passed but before its timer ran.
    // The deadline then reads expired (no time left) yet never ends — no
    // abort, no onDone — so a phase left to it must still fail at its limit.
    describe('disposed after its time passed, before its timer ran', () => {
      const lateDisposed = (clock: ManualClock) => {
        // Scheduled before the deadline's own timer, due with it: runs first,
        // as a response finishing on a late loop turn.
        clock.setTimeout(() => deadline.dispose(), 300)
        const deadline = Deadline.after(300, { clock })
        return deadline
      }

      it('a server that never answers fails at the headers limit', () => {
        const clock = new ManualClock()
        const deadline = lateDisposed(clock)
        const attempt = new Attempt({
          deadline,
          signal: undefined,
          limits: { ...limits, headersTimeoutMs: 400 },
          clock,
          method: 'GET',
          url: 'http://x/',
          number: 1,
        })
        attempt.enter('headers')
        clock.advance(300)
        expect(deadline.done).toBe(false)
        expect(deadline.remaining()).toBe(0)
        clock.advance(101)
        expect(attempt.reason).toMatchObject({ code: 'HEADERS_TIMEOUT', limitMs: 400 })
        expect(clock.pendingTimers).toBe(0)
      })

      it('a body still flowing is cut only once silent for its limit', () => {
        const clock = new ManualClock()
        const deadline = lateDisposed(clock)
        const attempt = inBody(deadline)
        for (let i = 0; i < 4; i++) {
          clock.advance(300)
          attempt.chunk(10)
        }
        expect(attempt.done).toBe(false)
        clock.advance(399)
        expect(attempt.done).toBe(false)
        clock.advance(1)
        expect(attempt.reason).toMatchObject({ code: 'BODY_TIMEOUT', limitMs: 400 })
      })
    })

    // undici tells of upload pieces after the response headers too (a server
    // answering before reading the whole body): those say nothing of the
    // response body's silence, as under no deadline.
    it('a silent body fails at its limit while the upload still goes', () => {
      const clock = new ManualClock()
      const deadline = Deadline.after(300, { clock })
      const attempt = inBody(deadline)
      deadline.dispose()
      for (let i = 0; i < 4; i++) {
        clock.advance(100)
        attempt.sending()
      }
      expect(attempt.reason).toMatchObject({ code: 'BODY_TIMEOUT', limitMs: 400 })
    })

    // A budget on trial (`parent.child(ms, { observe: true })`) disposed after
    // its observed expiry — its `using` scope left while a background call
    // goes on — is no longer its parent's child, so the parent's expiry never
    // reached the attempt, which listens to the trial alone; the backstop saw
    // 0 ms left on the parent and re-armed itself every limit, for good.
    it.each([
      ['headers', 10_000],
      ['body', 10_000],
      ['headers', 0],
      ['body', 0],
    ] as const)(
      '%s (limit %i ms): a trial disposed after its observed expiry ends with its enforcing parent',
      (phase, limitMs) => {
        const clock = new ManualClock()
        const parent = Deadline.after(300, { clock })
        const trial = parent.child(100, { observe: true })
        const attempt = new Attempt({
          deadline: trial,
          signal: undefined,
          limits: { ...bodyLimited, headersTimeoutMs: limitMs, bodyTimeoutMs: limitMs },
          clock,
          method: 'GET',
          url: 'http://x/',
          number: 1,
        })
        attempt.enter(phase)
        clock.advance(150)
        trial.dispose()
        expect(attempt.done).toBe(false)
        // At the parent's expiry, not at the phase's own limit (or never, under 0).
        clock.advance(150)
        expect(parent.done).toBe(true)
        expect(attempt.done).toBe(true)
        expect(attempt.reason).toBe(parent.reason)
        expect(clock.pendingTimers).toBe(0)
      },
    )

    // Work in flight keeps the bound it started under: an attempt sent under
    // a trial that is then disposed while live (its `using` scope left while
    // the body is read) still ends with the request — its expiry, or the
    // cancel of a client that left, under a limit of 0 too. One made after
    // the dispose runs as under no deadline (core's boundingDeadline), to its
    // own limit.
    it.each([
      ['expires', (parent: Deadline) => parent],
      [
        'is cancelled (the client left)',
        (parent: Deadline) => parent.cancel(new Error('client left')),
      ],
    ] as const)(
      'a trial disposed while live: the attempt in flight ends when the parent %s; one made after the dispose runs to its limit',
      (_, end) => {
        const clock = new ManualClock()
        const parent = Deadline.after(300, { clock })
        const trial = parent.child(100, { observe: true })
        const make = (headersTimeoutMs: number) =>
          new Attempt({
            deadline: trial,
            signal: undefined,
            limits: { ...bodyLimited, headersTimeoutMs },
            clock,
            method: 'GET',
            url: 'http://x/',
            number: 1,
          })
        const inFlight = make(0)
        inFlight.enter('headers')
        clock.advance(50)
        trial.dispose()
        const after = make(1_000)
        after.enter('headers')
        end(parent)
        clock.advance(250)
        expect(parent.done).toBe(true)
        expect(inFlight.done).toBe(true)
        expect(inFlight.reason).toBe(parent.reason)
        expect(after.done).toBe(false)
        clock.advance(750)
        expect(after.reason).toMatchObject({ code: 'HEADERS_TIMEOUT' })
        expect(clock.pendingTimers).toBe(0)
      },
    )
  })
})
