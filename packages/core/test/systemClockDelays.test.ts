import { setImmediate as realImmediate } from 'node:timers'
import {
  adaptiveReserveMs,
  Deadline,
  defaultReserveMs,
  MAX_RESERVE_MS,
  MAX_TIMER_MS,
  outcomeWithin,
  recordAnswerLateness,
  resetTimerLateness,
  systemClock,
  wait,
} from '@hourglass/core'
import { afterEach, expect, it, vi } from 'vitest'

// systemClock.setTimeout clamped a negative delay to 0 but passed NaN (and
// undefined) through: Node 20 fires such a timer after 1 ms, as it would 0,
// but Node ≥ 23 also prints a TimeoutNaNWarning (nodejs/node#46678) for
// every one. A delay that is not a number above 0 is due at once, as
// ManualClock has it; Node is handed 0.

afterEach(() => {
  vi.restoreAllMocks()
})

it.each([
  ['NaN', Number.NaN, 0],
  ['undefined', undefined, 0],
  ['negative', -5, 0],
  ['0', 0, 0],
  ['12.5', 12.5, 12.5],
  ['Infinity', Number.POSITIVE_INFINITY, MAX_TIMER_MS],
])('a delay of %s reaches Node as the delay it means', (_name, ms, expected) => {
  const spy = vi.spyOn(globalThis, 'setTimeout')
  const handle = systemClock.setTimeout(() => {}, ms as number)
  systemClock.clearTimeout(handle)
  expect(spy).toHaveBeenCalledTimes(1)
  expect(spy.mock.calls[0]?.[1]).toBe(expected)
})

// Fake timers (`vi.useFakeTimers()`, Jest's, @sinonjs/fake-timers) replace the
// global `performance` with one their `advanceTimersByTime` moves. systemClock
// read perf_hooks' own object, which they leave alone: a deadline's timer,
// fired by the fake step, found real time short of its expiry and re-armed,
// so in an app's test that faked time no deadline expired and no `wait` (a
// retry's back-off) ever ended.
it('fake timers drive the default clock: a deadline expires and a wait ends as their time moves', async () => {
  vi.useFakeTimers()
  try {
    const deadline = Deadline.after(1000)
    const reasons: unknown[] = []
    deadline.onDone((reason) => reasons.push(reason))
    vi.advanceTimersByTime(999)
    expect(deadline.done).toBe(false)
    vi.advanceTimersByTime(1)
    expect(deadline.expired).toBe(true)
    expect(reasons).toEqual([expect.objectContaining({ code: 'DEADLINE_EXCEEDED' })])
    const backOff = wait(500)
    await vi.advanceTimersByTimeAsync(500)
    await expect(backOff).resolves.toBe('timer')
  } finally {
    vi.useRealTimers()
  }
})

// Core's own handles are no waits for time: the interval that holds the
// process open while a step or an endless wait is pending, and the turn of
// the loop `outcomeWithin` gives late I/O. Taken from the faked globals,
// `vi.runAllTimers()` fired that interval 10,000 times and threw ("Aborting
// after running 10000 timers, assuming an infinite loop!"), and a call timed
// out by `outcomeWithin` stayed pending until fake time moved again.
it('under fake timers, runAllTimers runs with a step or an endless wait pending, and outcomeWithin times out', async () => {
  vi.useFakeTimers()
  try {
    const signal = new AbortController()
    const endless = wait(Number.POSITIVE_INFINITY, { signal: signal.signal }).catch(
      (reason: unknown) => reason,
    )
    const step = Deadline.after(1000)
      .plan({ step: 1 }, { reserveMs: 0 })
      .run('step', () => new Promise<never>(() => {}))
    step.catch(() => {})
    expect(() => vi.runAllTimers()).not.toThrow()
    await expect(step).rejects.toMatchObject({ code: 'DEADLINE_EXCEEDED', slice: 'step' })
    signal.abort('done')
    await expect(endless).resolves.toBe('done')

    let outcome: unknown = 'pending'
    void outcomeWithin(new Promise<never>(() => {}), 100).then((value) => {
      outcome = value
    })
    await vi.advanceTimersByTimeAsync(100)
    for (let turn = 0; turn < 3; turn++) await new Promise((resolve) => realImmediate(resolve))
    expect(outcome).toBeUndefined()
  } finally {
    vi.useRealTimers()
  }
})

// The adaptive reserve's ticker (it closes the event-loop window each 250 ms)
// was set with the global setInterval: an app's test that faked time after a
// request had read the reserve (deadline() with no reserveMs) threw "Aborting
// after running 10000 timers" from `vi.runAllTimers()`.
it('under fake timers, runAllTimers runs after the adaptive reserve was read', () => {
  resetTimerLateness()
  vi.useFakeTimers()
  try {
    adaptiveReserveMs()
    const deadline = Deadline.after(1000)
    expect(() => vi.runAllTimers()).not.toThrow()
    expect(deadline.expired).toBe(true)
  } finally {
    vi.useRealTimers()
    resetTimerLateness()
  }
})

// A deadline made before fake timers and fired after reads fake time against
// its real expiry: it recorded the fake time as lateness (~86,400,000 ms
// here), and two such pinned the adaptive reserve at its 100 ms ceiling for
// the minute a sample counts. No lateness is recorded under fake time.
it('a deadline spanning the switch to fake timers records no lateness: the adaptive reserve is not pinned', async () => {
  resetTimerLateness()
  const madeBefore = [Deadline.after(1), Deadline.after(1)]
  vi.useFakeTimers()
  try {
    vi.advanceTimersByTime(24 * 3_600_000)
    // Their real timers fire; the fake time read is past their expiry.
    await Promise.all(madeBefore.map((d) => new Promise((resolve) => d.onDone(resolve))))
  } finally {
    vi.useRealTimers()
  }
  try {
    const now = performance.now()
    adaptiveReserveMs(now) // starts the loop monitor; nothing yields, so it samples nothing
    expect(adaptiveReserveMs(now + 1001)).toBeLessThan(MAX_RESERVE_MS)
  } finally {
    resetTimerLateness()
  }
})

// The system clock on fake time is no real-time clock: the default reserve
// is the floor there, as on a ManualClock, or a test's 504 moved with the
// runner's load (62 ms early after three slow answers had been recorded).
it('while fake timers drive the system clock, the default reserve is the floor, whatever the process has learned', () => {
  resetTimerLateness()
  try {
    for (let i = 0; i < 3; i++) recordAnswerLateness(60)
    expect(defaultReserveMs(systemClock)).toBeGreaterThan(60)
    vi.useFakeTimers()
    expect(defaultReserveMs(systemClock)).toBe(10)
    vi.useRealTimers()
    expect(defaultReserveMs(systemClock)).toBeGreaterThan(60)
  } finally {
    vi.useRealTimers()
    resetTimerLateness()
  }
})
