/**
 * Time as Hourglass sees it. `now()` is monotonic milliseconds (never
 * wall-clock: NTP steps must not stretch or shrink a budget) — `systemClock`'s
 * too, except where fake timers are installed or removed: it reads the global
 * `performance`, and theirs starts near 0 (see `systemClock`). Inject your
 * own (see `ManualClock`) to drive time in tests without sleeping.
 */
export interface Clock {
  now(): number
  /**
   * Call `callback` after `ms`. The system clock's timers are unref'd (a
   * pending deadline alone never keeps a process alive) unless `keepAlive`
   * asks otherwise: a wait that somebody awaits must keep the process up.
   * Returns the handle `clearTimeout` takes: return one. A clock that
   * returns none (`undefined`) cannot clear its timers: core's own callbacks
   * then fire into nothing (and release what they held when cleared), but
   * other packages' timers (fetch's phase limits, llm's first-token timer)
   * act as if never cleared, and a `keepAlive` timer still keeps the
   * process up until it fires.
   */
  setTimeout(callback: () => void, ms: number, options?: TimerOptions): unknown
  clearTimeout(handle: unknown): void
  /**
   * True when this clock runs on the process's real time — `now()` is the
   * global `performance.now()` and its timers are the global timers — as
   * `systemClock` does, or a wrapper that delegates to it (one that counts
   * timers, say). How late such a clock's timers fire, and how late a
   * server's timeout answers leave, is this process's lateness: it feeds the
   * adaptive reserve (`adaptiveReserveMs`). While fake timers have replaced
   * the global `performance` such a clock runs on their time, and none is
   * recorded. A clock that moves when told (`ManualClock`) leaves it
   * undefined.
   */
  readonly realTime?: boolean
}

export interface TimerOptions {
  /** Keep the process alive until the timer fires or is cleared. Default false (unref'd). */
  keepAlive?: boolean | undefined
}

/**
 * Whether `value` has a clock's three methods: what every option that takes a
 * `clock` checks when it is given, rather than failing each call later with
 * "clock.now is not a function".
 */
export function isClock(value: unknown): value is Clock {
  if (typeof value !== 'object' || value === null) return false
  const c = value as Partial<Clock>
  try {
    return (
      typeof c.now === 'function' &&
      typeof c.setTimeout === 'function' &&
      typeof c.clearTimeout === 'function'
    )
  } catch {
    return false // a revoked Proxy or a throwing getter: a guard answers, it does not throw
  }
}

/** Node's timers overflow above this and fire after 1 ms instead. */
export const MAX_TIMER_MS = 2 ** 31 - 1

/**
 * The real clock: `performance.now()` and unref'd timers — a pending deadline
 * never keeps a process alive on its own, as with Node's own
 * `AbortSignal.timeout` — except the ones asked for with `keepAlive`.
 */
export const systemClock: Clock = {
  realTime: true,
  // The global `performance`, looked up at each read, not perf_hooks' own
  // object: fake timers (vitest's and Jest's `useFakeTimers()`,
  // @sinonjs/fake-timers) replace the global, and a clock reading the real
  // one never saw their time move. A deadline's timer, fired by
  // `advanceTimersByTime`, found its expiry not reached and re-armed: in an
  // app's test that faked time, no deadline expired and no `wait` (a retry's
  // back-off) ended. The global's getter costs ~10 ns a read. Their
  // `performance.now()` starts near 0 and moves only when told: a deadline
  // made before they were installed, or still pending when they are removed,
  // sees time jump (the README's Clock rule), and no lateness is recorded
  // under them (`timerLateness.ts`).
  now: () => performance.now(),
  setTimeout(callback, ms, options) {
    // Not a number above 0 (NaN, undefined, negative): due at once, as
    // ManualClock has it. Passed on, NaN fired after 1 ms anyway, and Node
    // ≥ 23 printed a TimeoutNaNWarning for each.
    const timer = setTimeout(callback, ms > 0 ? Math.min(ms, MAX_TIMER_MS) : 0)
    if (options?.keepAlive !== true) timer.unref()
    return timer
  },
  clearTimeout(handle) {
    clearTimeout(handle as NodeJS.Timeout)
  },
}
