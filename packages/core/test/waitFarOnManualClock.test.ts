import { ManualClock, outcomeWithin, type TimerOptions, wait } from '@hourglass/core'
import { expect, it, vi } from 'vitest'

const FAR = 1000 * 2 ** 31 // a thousand of Node's longest timers

// A wait past 2^31-1 ms re-arms in steps of it (Node's timers overflow
// beyond), and on a ManualClock each step was one more timer to fire:
// advancing a wait of Number.MAX_SAFE_INTEGER / 2 fired ~2.1 million of them,
// a quarter of a second of CPU, where a Deadline's timer waits the whole
// delay there. A wait's does too now: one timer.
it('a far wait on a ManualClock is one timer, not one per 2^31-1 ms', async () => {
  const clock = new ManualClock()
  const setTimeout = vi.spyOn(ManualClock.prototype, 'setTimeout')
  try {
    let result: string | undefined
    const pending = wait(FAR, { clock }).then((r) => {
      result = r
    })
    expect(clock.pendingTimers).toBe(1)
    clock.advance(FAR - 1)
    await Promise.resolve()
    expect(result).toBeUndefined()
    clock.advance(1)
    await pending
    expect(result).toBe('timer')
    expect(setTimeout).toHaveBeenCalledTimes(0)
    expect(clock.pendingTimers).toBe(0)
  } finally {
    setTimeout.mockRestore()
  }
})

it('a far outcomeWithin on a ManualClock is one timer, and leaves none once settled', async () => {
  const clock = new ManualClock()
  const setTimeout = vi.spyOn(ManualClock.prototype, 'setTimeout')
  try {
    const pending = outcomeWithin(new Promise(() => {}), FAR, { clock })
    await Promise.resolve()
    clock.advance(FAR)
    await expect(pending).resolves.toBeUndefined()
    expect(setTimeout).toHaveBeenCalledTimes(0)
    expect(clock.pendingTimers).toBe(0)
    const settled = outcomeWithin(Promise.resolve(7), FAR, { clock })
    await expect(settled).resolves.toEqual({ ok: true, value: 7 })
    expect(clock.pendingTimers).toBe(0)
  } finally {
    setTimeout.mockRestore()
  }
})

it('a far wait aborted releases its one timer', async () => {
  const clock = new ManualClock()
  const controller = new AbortController()
  const pending = wait(FAR, { clock, signal: controller.signal })
  expect(clock.pendingTimers).toBe(1)
  controller.abort(new Error('stop'))
  await expect(pending).rejects.toThrow('stop')
  expect(clock.pendingTimers).toBe(0)
})

// A subclass that overrides setTimeout to see the waits armed on it (one
// that drives time to the next wait, as llm's test clock does) still sees a
// far wait: it is armed through its setTimeout, in steps, as before.
it('a ManualClock subclass that overrides setTimeout still sees a far wait armed', async () => {
  const armed: number[] = []
  const clock = new (class extends ManualClock {
    override setTimeout(callback: () => void, ms: number, options?: TimerOptions): unknown {
      if (options?.keepAlive === true) armed.push(ms)
      return super.setTimeout(callback, ms)
    }
  })()
  const pending = wait(3 * 2 ** 31, { clock })
  expect(armed).toEqual([2 ** 31 - 1])
  clock.advance(3 * 2 ** 31)
  await expect(pending).resolves.toBe('timer')
})
