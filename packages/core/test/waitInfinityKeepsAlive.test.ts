import {
  type Clock,
  Deadline,
  isDeadlineExceeded,
  MAX_TIMER_MS,
  ManualClock,
  type TimerOptions,
  untilEnded,
  wait,
} from '@hourglass/core'
import { describe, expect, it } from 'vitest'

/**
 * A ManualClock that says it is a real clock (`realTime`), as the system
 * clock does: a wait on it must then hold the process open itself. Its own
 * timers are manual, so the only real handles are the ones the wait takes.
 */
class RealTimeManualClock implements Clock {
  readonly realTime = true
  readonly #inner = new ManualClock()
  now(): number {
    return this.#inner.now()
  }
  setTimeout(callback: () => void, ms: number, _options?: TimerOptions): unknown {
    return this.#inner.setTimeout(callback, ms)
  }
  clearTimeout(handle: unknown): void {
    this.#inner.clearTimeout(handle)
  }
  advance(ms: number): void {
    this.#inner.advance(ms)
  }
}

/** Ref'd timers of this process: what keeps a script from exiting while it awaits. */
function refdTimers(): number {
  return process.getActiveResourcesInfo().filter((type) => type === 'Timeout').length
}

const never = new Promise<never>(() => {})

// The deadline's own timer is unref'd and an abort may come from an unref'd
// source: a wait of Infinity armed nothing, so a script awaiting it exited
// with code 13 (unsettled top-level await) before either could end it.
describe('a pending wait(Infinity) keeps the process alive', () => {
  it('on a test clock (not realTime) it takes no handle: nothing to keep alive', async () => {
    const clock = new ManualClock()
    const before = refdTimers()
    const controller = new AbortController()
    const waiting = wait(Number.POSITIVE_INFINITY, { signal: controller.signal, clock }).catch(
      (e: unknown) => e,
    )
    expect(refdTimers()).toBe(before)
    controller.abort(new Error('stop'))
    await waiting
  })

  it('with a signal: one kept-alive timer until the abort, none after', async () => {
    const clock = new RealTimeManualClock()
    const before = refdTimers()
    const controller = new AbortController()
    const waiting = wait(Number.POSITIVE_INFINITY, { signal: controller.signal, clock }).catch(
      (e: unknown) => e,
    )
    expect(refdTimers()).toBe(before + 1)
    clock.advance(MAX_TIMER_MS * 2) // time passing never ends it
    expect(refdTimers()).toBe(before + 1)
    const reason = new Error('stop')
    controller.abort(reason)
    expect(await waiting).toBe(reason)
    expect(refdTimers()).toBe(before)
  })

  it('with a deadline (whose own timer is unref’d) until it expires', async () => {
    const clock = new RealTimeManualClock()
    const before = refdTimers()
    const deadline = Deadline.after(300, { clock })
    const waiting = wait(Number.POSITIVE_INFINITY, { deadline }).catch((e: unknown) => e)
    expect(refdTimers()).toBe(before + 1)
    clock.advance(300)
    expect(isDeadlineExceeded(await waiting)).toBe(true)
    expect(refdTimers()).toBe(before)
  })

  it('woken by wakeOn: released when it wakes', async () => {
    const clock = new RealTimeManualClock()
    const before = refdTimers()
    let wake: (() => void) | undefined
    const waiting = wait(Number.POSITIVE_INFINITY, {
      clock,
      wakeOn: (w) => {
        wake = w
        return () => {}
      },
    })
    expect(refdTimers()).toBe(before + 1)
    wake?.()
    await expect(waiting).resolves.toBe('woken')
    expect(refdTimers()).toBe(before)
  })

  it('untilEnded on a promise that never settles, until the deadline ends it', async () => {
    const clock = new RealTimeManualClock()
    const before = refdTimers()
    const deadline = Deadline.after(300, { clock })
    const waiting = untilEnded(never, { deadline }).catch((e: unknown) => e)
    expect(refdTimers()).toBe(before + 1)
    clock.advance(300)
    expect(isDeadlineExceeded(await waiting)).toBe(true)
    expect(refdTimers()).toBe(before)
  })

  it('untilEnded on a promise that settles first: released with it', async () => {
    const clock = new RealTimeManualClock()
    const before = refdTimers()
    const deadline = Deadline.after(300, { clock })
    let answer: ((value: number) => void) | undefined
    const work = new Promise<number>((resolve) => {
      answer = resolve
    })
    const waiting = untilEnded(work, { deadline })
    expect(refdTimers()).toBe(before + 1)
    answer?.(7)
    await expect(waiting).resolves.toBe(7)
    expect(refdTimers()).toBe(before)
  })
})
