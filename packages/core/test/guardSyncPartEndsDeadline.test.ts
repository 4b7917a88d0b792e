import { Deadline, guard, isDeadlineExceeded, ManualClock } from '@hourglass/core'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

/**
 * A guarded function whose synchronous part ends the deadline — it runs past
 * the time left before returning its promise, or cancels the deadline
 * itself. guard read `remaining()` after the work started and handed 0 to
 * p-timeout, which refused it ("Expected `milliseconds` to be a positive
 * number, got `0`"); the work was never cancelled and its later rejection
 * went unhandled (the process exited 1). A cancel inside the function was
 * never heard: the abort listener was added after it.
 */
describe('guard when the work function ends the deadline before it returns', () => {
  const unhandled: unknown[] = []
  const record = (reason: unknown) => unhandled.push(reason)
  beforeEach(() => {
    unhandled.length = 0
    process.on('unhandledRejection', record)
  })
  afterEach(() => {
    process.off('unhandledRejection', record)
  })

  /** A work promise that rejects when told to, counting its cancels. */
  function lateWork() {
    let fail: (error: Error) => void = () => {}
    const promise = new Promise<string>((_, reject) => {
      fail = reject
    })
    const work = Object.assign(promise, { cancels: 0, cancel: () => work.cancels++ })
    return { work, fail }
  }

  /** Past the macrotask where Node reports unhandled rejections. */
  const nextMacrotask = () => new Promise((resolve) => setImmediate(resolve))

  it('rejects with the expiry naming the slice when the timers ran during it', async () => {
    const clock = new ManualClock()
    const deadline = Deadline.after(20, { clock })
    const { work, fail } = lateWork()
    const guarded = guard(
      () => {
        clock.advance(30)
        return work
      },
      { deadline, slice: 'parse' },
    )
    await expect(guarded).rejects.toSatisfy(
      (error) => isDeadlineExceeded(error) && error.slice === 'parse',
    )
    expect(work.cancels).toBe(1)
    fail(new Error('downstream failed later'))
    await nextMacrotask()
    expect(unhandled).toEqual([])
    expect(clock.pendingTimers).toBe(0)
  })

  it('rejects with the expiry when its time passed before the deadline timer ran', async () => {
    const clock = new ManualClock()
    const deadline = Deadline.after(20, { clock })
    const { work, fail } = lateWork()
    const guarded = guard(
      () => {
        // A busy loop: the time passes, no timer runs.
        clock.now = () => 60
        return work
      },
      { deadline, slice: 'parse' },
    )
    await expect(guarded).rejects.toSatisfy(
      (error) => isDeadlineExceeded(error) && error.slice === 'parse',
    )
    expect(work.cancels).toBe(1)
    fail(new Error('downstream failed later'))
    await nextMacrotask()
    expect(unhandled).toEqual([])
  })

  it('rejects with the cancel reason and cancels the work when it cancels the deadline', async () => {
    const deadline = Deadline.after(10_000)
    const reason = new Error('cancelled while starting')
    const { work, fail } = lateWork()
    const guarded = guard(
      () => {
        deadline.cancel(reason)
        return work
      },
      { deadline },
    )
    await expect(guarded).rejects.toBe(reason)
    expect(work.cancels).toBe(1)
    fail(new Error('downstream failed later'))
    await nextMacrotask()
    expect(unhandled).toEqual([])
  })

  it('still waits under an observe-only deadline whose time passed during it', async () => {
    const clock = new ManualClock()
    const deadline = Deadline.after(20, { clock, observe: true })
    const guarded = guard(
      () => {
        clock.advance(30)
        return Promise.resolve('ran')
      },
      { deadline },
    )
    await expect(guarded).resolves.toBe('ran')
  })
  describe('a work whose cancel() throws (it cannot: the request is already written)', () => {
    const uncaught: unknown[] = []
    const onUncaught = (error: unknown) => uncaught.push(error)
    beforeEach(() => {
      uncaught.length = 0
      process.prependListener('uncaughtException', onUncaught)
    })
    afterEach(() => {
      process.off('uncaughtException', onUncaught)
    })

    /** A work promise that rejects when told to, whose cancel() throws (or, async, rejects). */
    function stubbornWork(async: boolean) {
      let fail: (error: Error) => void = () => {}
      const promise = new Promise<string>((_, reject) => {
        fail = reject
      })
      const refuse = () => {
        throw new Error('cannot cancel: request already written')
      }
      const work = Object.assign(promise, {
        // `async () => …` type-checks as `() => void`.
        cancel: async ? ((async () => refuse()) as () => void) : refuse,
      })
      return { work, fail }
    }

    it.each([
      ['its synchronous part runs past the deadline', 'sync', false],
      ['the deadline had ended before (a promise given)', 'ended', false],
      ['the deadline is cancelled during the wait', 'wait', false],
      ['its synchronous part runs past the deadline, an async cancel', 'sync', true],
      ['the deadline is cancelled during the wait, an async cancel', 'wait', true],
    ])(
      '%s: guard rejects with the deadline’s error, nothing thrown or left unhandled',
      async (_name, when, async) => {
        const clock = new ManualClock()
        const deadline = Deadline.after(20, { clock })
        const { work, fail } = stubbornWork(async)
        const reason = new Error('client left')
        if (when === 'ended') deadline.cancel(reason)
        let guarded: Promise<string> | undefined
        expect(() => {
          guarded =
            when === 'sync'
              ? guard(
                  () => {
                    clock.advance(30)
                    return work
                  },
                  { deadline, slice: 'parse' },
                )
              : guard(work, { deadline, slice: 'parse' })
        }).not.toThrow()
        if (when === 'wait') deadline.cancel(reason)
        if (when === 'sync') {
          await expect(guarded).rejects.toSatisfy(isDeadlineExceeded)
        } else {
          await expect(guarded).rejects.toBe(reason)
        }
        fail(new Error('downstream failed later'))
        await nextMacrotask()
        expect(unhandled).toEqual([])
        expect(uncaught).toEqual([])
      },
    )
  })
})
