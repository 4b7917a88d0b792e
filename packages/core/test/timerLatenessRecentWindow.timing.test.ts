import { resetTimerLateness, timerLatenessMs } from '@hourglass/core'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { closeLatenessWindow } from '../src/timerLateness.js'

// The ticker is set with `node:timers`' own setInterval, which fake timers
// leave alone (so an app's `vi.runAllTimers()` does not spin on it). Here it
// is routed to the globals, read at each call, so `startAt` can fake it.
vi.mock('node:timers', async (importOriginal) => {
  const timers = await importOriginal<typeof import('node:timers')>()
  return {
    ...timers,
    setInterval: ((...args: Parameters<typeof setInterval>) =>
      globalThis.setInterval(...args)) as typeof setInterval,
    clearInterval: (handle: Parameters<typeof clearInterval>[0]) =>
      globalThis.clearInterval(handle),
  }
})

afterEach(() => {
  vi.useRealTimers()
  resetTimerLateness()
})

/**
 * Start the monitor at `t0` with its ticker faked: the windows here are
 * closed by the times the test gives, never by the real ticker (on a loaded
 * machine a real second can pass during `stall()`, and the real ticker
 * would close the window before the test does). The monitor's own sampling
 * stays real (a libuv timer, not `setInterval`).
 */
function startAt(t0: number): void {
  resetTimerLateness()
  vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] })
  timerLatenessMs(t0)
}

/** Keep the event loop busy for `ms`. */
function block(ms: number): void {
  const until = performance.now() + ms
  while (performance.now() < until) {}
}

/**
 * Let the loop run the monitor's sampling timer (every 10 ms), overdue after
 * a block, before the test goes on: libuv runs timers in the order they are
 * due, and a timer set now for 20 ms is due after it whatever the loop's
 * cached time says. One set for 0 ms was due 1 ms after the loop's cached
 * time, which a block inside the timers phase leaves stale: it could run
 * ahead of the monitor's tick (a loaded CI run read 0 for a 60 ms stall
 * whose sample had not been taken yet).
 */
const timersPhase = () => new Promise((resolve) => setTimeout(resolve, 20))

/**
 * One stall of the loop of at least 60 ms, sampled by the monitor. Its first
 * tick after it starts only notes the time (a delay is measured from one
 * tick to the next): the first block makes sure it has ticked, the second
 * is the stall it samples.
 */
async function stall(): Promise<void> {
  block(20)
  await timersPhase()
  block(60)
  await timersPhase()
}

/**
 * The loop's share of `timerLatenessMs()` is the p99 of the last complete
 * window of about 1 s. Windows were closed only by reads: after a quiet
 * spell (no request, so no read) the first read closed a window as long as
 * the spell, and a stall long past still set the reserve.
 *
 * Times past the real ones are given to the reads and to the ticker's
 * callback (`closeLatenessWindow`); the stall's sample is real. Between the
 * stall and the last read nothing yields to the loop: the monitor takes no
 * other sample.
 */
describe('timer lateness: the window read is the last second, not the whole quiet spell', () => {
  it('a stall in a window the ticker closed long ago no longer counts', async () => {
    const t0 = performance.now()
    startAt(t0) // starts the monitor and its first window
    await stall()
    // No request for ten seconds: the ticker closes a window each second.
    for (let s = 1; s <= 10; s++) closeLatenessWindow(t0 + s * 1000 + 1)
    expect(timerLatenessMs(t0 + 10_200)).toBe(0)
  })

  it('the stall counts while its window is the last one closed', async () => {
    const t0 = performance.now()
    startAt(t0)
    await stall()
    closeLatenessWindow(t0 + 1001)
    expect(timerLatenessMs(t0 + 1500)).toBeGreaterThan(0)
    closeLatenessWindow(t0 + 2002)
    expect(timerLatenessMs(t0 + 2500)).toBe(0)
  })

  it('a window is not closed before it is a second old', async () => {
    const t0 = performance.now()
    startAt(t0)
    await stall()
    closeLatenessWindow(t0 + 999)
    expect(timerLatenessMs(t0 + 999)).toBe(0)
    expect(timerLatenessMs(t0 + 1001)).toBeGreaterThan(0)
  })

  it("the monitor starts one unref'd ticker with it, which a reset stops", () => {
    resetTimerLateness()
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] })
    expect(vi.getTimerCount()).toBe(0)
    timerLatenessMs()
    expect(vi.getTimerCount()).toBe(1)
    timerLatenessMs()
    expect(vi.getTimerCount()).toBe(1)
    resetTimerLateness()
    expect(vi.getTimerCount()).toBe(0)
  })
})
