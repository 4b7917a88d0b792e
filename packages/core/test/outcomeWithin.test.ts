import {
  ClientClosedError,
  Deadline,
  isDeadlineExceeded,
  ManualClock,
  outcomeWithin,
} from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { stillReachable } from './support/collectGarbage.js'

const never = new Promise<never>(() => {})

/** A promise and its resolve/reject, settled by the test. */
function pending<T>() {
  let resolve!: (value: T) => void
  let reject!: (error: unknown) => void
  const promise = new Promise<T>((res, rej) => {
    resolve = res
    reject = rej
  })
  return { promise, resolve, reject }
}

describe('outcomeWithin: how work settled, or undefined once ms passed', () => {
  it('is undefined when the time runs out first; the work goes on', async () => {
    const clock = new ManualClock()
    const work = pending<number>()
    const within = outcomeWithin(work.promise, 100, { clock })
    clock.advance(99)
    await Promise.resolve()
    clock.advance(1)
    await expect(within).resolves.toBeUndefined()
    expect(clock.pendingTimers).toBe(0)
    work.resolve(1) // late: dropped, nothing thrown
  })

  it('is the value when work settles first, and releases the timer', async () => {
    const clock = new ManualClock()
    const work = pending<number>()
    const within = outcomeWithin(work.promise, 100, { clock })
    clock.advance(50)
    work.resolve(7)
    await expect(within).resolves.toEqual({ ok: true, value: 7 })
    expect(clock.pendingTimers).toBe(0)
  })

  it('is the error when work rejects first (the outcome, not a rejection)', async () => {
    const clock = new ManualClock()
    const failure = new Error('store down')
    const within = outcomeWithin(Promise.reject(failure), 100, { clock })
    await expect(within).resolves.toEqual({ ok: false, error: failure })
  })

  it('takes an outcome that came in as the timer fired: the work did settle', async () => {
    const clock = new ManualClock()
    const work = pending<string>()
    const within = outcomeWithin(work.promise, 100, { clock })
    // Settled, its handlers not yet run, when the timer ends the wait.
    work.resolve('late but in')
    clock.advance(100)
    await expect(within).resolves.toEqual({ ok: true, value: 'late but in' })
  })

  it('accepts a plain value and a thenable that is no Promise', async () => {
    const clock = new ManualClock()
    await expect(outcomeWithin(3, 100, { clock })).resolves.toEqual({ ok: true, value: 3 })
    // biome-ignore lint/suspicious/noThenProperty: a thenable that is no Promise is what this test hands over
    const thenable = { then: (ok: (value: number) => void) => ok(4) }
    await expect(
      outcomeWithin(thenable as unknown as Promise<number>, 100, { clock }),
    ).resolves.toEqual({ ok: true, value: 4 })
  })

  it("rejects with the deadline's reason, or the signal's, when either ends first", async () => {
    const clock = new ManualClock()
    const deadline = Deadline.after(10, { clock })
    const expired = outcomeWithin(never, 100, { deadline }).catch((e: unknown) => e)
    clock.advance(10)
    expect(isDeadlineExceeded(await expired)).toBe(true)

    const controller = new AbortController()
    const aborted = outcomeWithin(never, 100, { clock, signal: controller.signal }).catch(
      (e: unknown) => e,
    )
    controller.abort(new ClientClosedError())
    expect(await aborted).toBeInstanceOf(ClientClosedError)
    expect(clock.pendingTimers).toBe(0)
  })

  it('Infinity with no deadline nor signal is the outcome, holding no timer open', async () => {
    const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length
    const before = timers()
    void outcomeWithin(never, Number.POSITIVE_INFINITY)
    expect(timers()).toBe(before)
    await expect(
      outcomeWithin(Promise.resolve(2), Number.POSITIVE_INFINITY, null),
    ).resolves.toEqual({ ok: true, value: 2 })
  })

  it('refuses a deadline or a signal of the wrong kind, and an ms that is no number, naming itself', async () => {
    await expect(outcomeWithin(1, 10, { deadline: 5 as never })).rejects.toThrow(
      /^outcomeWithin: deadline must be a Deadline, got 5$/,
    )
    await expect(
      outcomeWithin(1, 10, { signal: new AbortController() as unknown as AbortSignal }),
    ).rejects.toThrow(/outcomeWithin: signal must be an AbortSignal/)
    await expect(outcomeWithin(1, '10' as unknown as number)).rejects.toThrow(
      /outcomeWithin expects a number of ms/,
    )
  })

  it('a later rejection of work it stopped waiting on is no unhandled rejection', async () => {
    const unhandled: unknown[] = []
    const listener = (reason: unknown) => unhandled.push(reason)
    process.on('unhandledRejection', listener)
    try {
      const controller = new AbortController()
      controller.abort(new Error('caller aborted'))
      const work = pending<never>()
      await expect(outcomeWithin(work.promise, 100, { signal: controller.signal })).rejects.toThrow(
        'caller aborted',
      )
      work.reject(new Error('store down'))
      await new Promise((resolve) => setImmediate(resolve))
      await new Promise((resolve) => setImmediate(resolve))
      expect(unhandled).toEqual([])
    } finally {
      process.off('unhandledRejection', listener)
    }
  })
})

/** Waiters on `shared` whose time runs out (their deadlines still pending); what they held, weakly. */
async function waitersGiveUp(shared: Promise<never>, count: number): Promise<WeakRef<object>[]> {
  const clock = new ManualClock()
  const held: WeakRef<object>[] = []
  const ended: Promise<unknown>[] = []
  for (let i = 0; i < count; i++) {
    const deadline = Deadline.after(1000, { clock })
    const controller = new AbortController()
    held.push(new WeakRef(deadline), new WeakRef(controller.signal))
    ended.push(outcomeWithin(shared, 10, { clock, deadline, signal: controller.signal }))
  }
  clock.advance(10) // every waiter's time runs out: each gives up on `shared`
  expect(await Promise.all(ended)).toEqual(Array(count).fill(undefined))
  return held
}

describe('outcomeWithin on work that outlives its waiters', () => {
  it('keeps none of the waiters whose time ran out reachable from the work', async () => {
    const shared = new Promise<never>(() => {})
    const held = await waitersGiveUp(shared, 20)
    expect(await stillReachable(held)).toBe(0)
    // `shared` is still pending and reachable here: what it holds is what leaked.
    expect(shared).toBeInstanceOf(Promise)
  })
})
