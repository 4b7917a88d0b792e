import { EventEmitter, getEventListeners } from 'node:events'
import { type Deadline, ManualClock, wait } from '@hourglass/core'
import { describe, expect, it } from 'vitest'

/** A live deadline that counts the onDone hooks a wait holds on it. */
function countingDeadline(clock: ManualClock): Deadline & { hooks: number } {
  const fake = {
    hooks: 0,
    done: false,
    reason: undefined,
    clock,
    onDone(_listener: (reason: unknown) => void) {
      fake.hooks++
      return () => {
        fake.hooks--
      }
    },
  }
  return fake as unknown as Deadline & { hooks: number }
}

// wait() subscribed to the signal and the deadline, then called wakeOn inside
// the Promise executor: a throw there rejected the wait but left the abort
// listener and the deadline hook behind, one per call, on what is often a
// process-wide shutdown signal.
describe('wait() whose wakeOn throws', () => {
  it('rejects with the error and releases its signal listener, its deadline hook and its timer', async () => {
    const clock = new ManualClock()
    const shutdown = new AbortController()
    const deadline = countingDeadline(clock)
    const failure = new Error('subscribe failed')
    for (let i = 0; i < 3; i++) {
      await expect(
        wait(1000, {
          signal: shutdown.signal,
          deadline,
          clock,
          wakeOn: () => {
            throw failure
          },
        }),
      ).rejects.toBe(failure)
    }
    expect(getEventListeners(shutdown.signal, 'abort')).toHaveLength(0)
    expect(deadline.hooks).toBe(0)
    expect(clock.pendingTimers).toBe(0)
  })

  it('that woke it before throwing: resolves woken, nothing left behind', async () => {
    const clock = new ManualClock()
    const shutdown = new AbortController()
    const waiting = wait(1000, {
      signal: shutdown.signal,
      clock,
      wakeOn: (wake) => {
        wake()
        throw new Error('late failure')
      },
    })
    await expect(waiting).resolves.toBe('woken')
    expect(getEventListeners(shutdown.signal, 'abort')).toHaveLength(0)
    expect(clock.pendingTimers).toBe(0)
  })
})

// The unsubscribe is called as the wait settles, from a timer or an abort
// listener: a throw there (or a value that is no function) escaped before
// the wait resolved, and the wait never settled.
describe('wait() whose wakeOn unsubscribe fails', () => {
  it('returning something that is no function (the emitter of `emitter.once`): rejects at once with a TypeError, nothing armed', async () => {
    const clock = new ManualClock()
    const shutdown = new AbortController()
    const slots = new EventEmitter()
    const waiting = wait(1000, {
      signal: shutdown.signal,
      clock,
      wakeOn: (wake) => slots.once('free', wake) as unknown as () => void,
    })
    await expect(waiting).rejects.toThrow(
      'wait: wakeOn must return its unsubscribe function (or nothing), got an object',
    )
    expect(getEventListeners(shutdown.signal, 'abort')).toHaveLength(0)
    expect(clock.pendingTimers).toBe(0)
  })

  it('that throws: the wait rejects with its error when its time is up, and the clock moves on', async () => {
    const clock = new ManualClock()
    const failure = new Error('unsubscribe failed')
    const waiting = wait(1000, {
      clock,
      wakeOn: () => () => {
        throw failure
      },
    })
    const settled = waiting.then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    )
    expect(() => clock.advance(1000)).not.toThrow()
    expect(await settled).toEqual({ error: failure })
  })

  it('that throws after a wake while subscribing: the wait rejects with its error, nothing left behind', async () => {
    const clock = new ManualClock()
    const shutdown = new AbortController()
    const failure = new Error('unsubscribe failed')
    const waiting = wait(1000, {
      signal: shutdown.signal,
      clock,
      wakeOn: (wake) => {
        wake() // already free
        return () => {
          throw failure
        }
      },
    })
    await expect(waiting).rejects.toBe(failure)
    expect(getEventListeners(shutdown.signal, 'abort')).toHaveLength(0)
    expect(clock.pendingTimers).toBe(0)
  })
})
