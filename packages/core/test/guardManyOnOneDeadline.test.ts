import { getEventListeners } from 'node:events'
import { Deadline, guard, ManualClock, runWithDeadline } from '@hourglass/core'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

/**
 * A handler that fans out under its request's deadline (`Promise.all(ids.map((id)
 * => guard(db.get(id))))`) runs many guards on one deadline at once. Each
 * added an `abort` listener to the deadline's signal: at 11 in flight Node
 * warned "Possible EventTarget memory leak detected. 11 abort listeners added
 * to [AbortSignal]" (MaxListenersExceededWarning), in every such request's
 * logs. `wait` and `untilEnded` hear the deadline through `onDone`, which
 * holds no listener on the signal; guard now does too.
 */
describe('guard: many at once on one deadline', () => {
  const warnings: Error[] = []
  const onWarning = (warning: Error) => warnings.push(warning)
  beforeEach(() => {
    warnings.length = 0
    process.on('warning', onWarning)
  })
  afterEach(() => {
    process.off('warning', onWarning)
  })

  /** Lets process.emitWarning's 'warning' event (emitted on the next tick) arrive. */
  const warningsEmitted = () => new Promise<void>((resolve) => setImmediate(resolve))

  it('12 pending guards: no MaxListenersExceededWarning, no abort listener on the signal; a cancel ends all 12 with its reason, each work cancelled once', async () => {
    const clock = new ManualClock()
    const deadline = Deadline.after(1000, { clock })
    const cancels: number[] = Array.from({ length: 12 }, () => 0)
    const guarded = runWithDeadline(deadline, () =>
      cancels.map((_, i) =>
        guard(
          Object.assign(new Promise<never>(() => {}), {
            cancel: () => {
              cancels[i] = (cancels[i] ?? 0) + 1
            },
          }),
        ),
      ),
    )
    await warningsEmitted()
    expect(warnings.map((w) => w.name)).toEqual([])
    expect(getEventListeners(deadline.signal, 'abort')).toHaveLength(0)

    const reason = new Error('client left')
    deadline.cancel(reason)
    const outcomes = await Promise.allSettled(guarded)
    expect(outcomes.every((o) => o.status === 'rejected' && o.reason === reason)).toBe(true)
    expect(cancels).toEqual(Array.from({ length: 12 }, () => 1))
    expect(clock.pendingTimers).toBe(0)
    await warningsEmitted()
    expect(warnings).toEqual([])
  })

  it('12 guards that settle leave nothing subscribed: the deadline expiring later rejects none of them and cancels no work', async () => {
    const clock = new ManualClock()
    const deadline = Deadline.after(100, { clock })
    let cancelled = 0
    const values = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        guard(Object.assign(Promise.resolve(i), { cancel: () => cancelled++ }), { deadline }),
      ),
    )
    expect(values).toEqual(Array.from({ length: 12 }, (_, i) => i))
    clock.advance(100)
    expect(deadline.done).toBe(true)
    expect(cancelled).toBe(0)
    expect(clock.pendingTimers).toBe(0)
    await warningsEmitted()
    expect(warnings).toEqual([])
  })
})
