import { Deadline, isDeadlineExceeded, ManualClock } from '@hourglass/core'
import { describe, expect, it } from 'vitest'

/**
 * What a `plan.run` step starts and leaves running under its slice's signal
 * — the call that lost a hedged `Promise.any`, the other half of a
 * `Promise.all` that failed fast — stops when the request's deadline ends.
 * `run` disposed the slice once the step settled, which cut it off from
 * the request: that work's signal was never aborted, not at the request's
 * expiry (its 504), not when the client left, and it ran on for as long as
 * it liked.
 */
describe('work a run step leaves running stops with the plan deadline', () => {
  async function hedged(request: Deadline): Promise<AbortSignal> {
    const plan = request.plan({ model: 1, write: 1 }, { reserveMs: 0 })
    let left: AbortSignal | undefined
    await plan.run('model', (signal) => {
      left = signal
      const loser = new Promise<string>(() => {}) // ignores nothing: it listens to `signal`
      return Promise.any([Promise.resolve('fast'), loser])
    })
    return left as AbortSignal
  }

  it('when the request expires', async () => {
    const clock = new ManualClock()
    const request = Deadline.after(300, { clock })
    const signal = await hedged(request)
    expect(signal.aborted).toBe(false) // the step is over; its slice's own time no longer counts
    clock.advance(300)
    expect(signal.aborted).toBe(true)
    expect(isDeadlineExceeded(signal.reason)).toBe(true)
    expect(signal.reason).toBe(request.reason)
  })

  it('when the request is cancelled (the client left)', async () => {
    const clock = new ManualClock()
    const request = Deadline.after(300, { clock })
    const signal = await hedged(request)
    const reason = new Error('client left')
    request.cancel(reason)
    expect(signal.aborted).toBe(true)
    expect(signal.reason).toBe(reason)
  })

  it('when the step failed fast and left the rest of a Promise.all running', async () => {
    const clock = new ManualClock()
    const request = Deadline.after(300, { clock })
    const plan = request.plan({ fanout: 1 }, { reserveMs: 0 })
    let left: AbortSignal | undefined
    const error = await plan
      .run('fanout', (signal) => {
        left = signal
        return Promise.all([Promise.reject(new Error('a failed')), new Promise(() => {})])
      })
      .catch((e: unknown) => e)
    expect((error as Error).message).toBe('a failed')
    expect(plan.report()[0]?.outcome).toBe('failed')
    expect(left?.aborted).toBe(false)
    clock.advance(300)
    expect(left?.aborted).toBe(true)
  })

  it('leaves no timer of its own and no link under a parent that never expires', async () => {
    const clock = new ManualClock()
    const request = Deadline.after(300, { clock })
    await request.plan({ a: 1 }, { reserveMs: 0 }).run('a', () => 'ok')
    expect(clock.pendingTimers).toBe(1) // the request's alone
    const worker = Deadline.never({ clock })
    let signal: AbortSignal | undefined
    await worker.plan({ a: 1 }).run('a', (s) => {
      signal = s
    })
    worker.cancel(new Error('shutdown'))
    expect(signal?.aborted).toBe(false) // disposed, as before: not kept for the life of the process
  })
})
