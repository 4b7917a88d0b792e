// perf_hooks' own `performance`: Node's global one is a lazy getter, read on
// every call (adaptiveReserveMs runs per request).
import { type IntervalHistogram, monitorEventLoopDelay, performance } from 'node:perf_hooks'
// Node's own, not the globals: see the ticker in `timerLatenessMs`.
import { clearInterval, setInterval } from 'node:timers'
import type { Clock } from './clock.js'
import { runOutsideContext } from './context.js'

/** Bounds of the adaptive reserve, ms: never less than the old fixed default, never more than a tenth of a second. */
export const MIN_RESERVE_MS = 10
export const MAX_RESERVE_MS = 100
/** How long one window of event-loop delay samples lasts before its p99 is read, ms. */
const WINDOW_MS = 1000
/**
 * How long a timer's or an answer's lateness counts, ms. Timeouts are rare in
 * a healthy server: without an age limit, a burst at start-up (JIT, a GC
 * storm, a deploy's cold caches) stayed among the last 64 samples for hours
 * and kept every later request's reserve near its ceiling.
 */
export const SAMPLE_MAX_AGE_MS = 60_000
/** The histogram's sampling period, ms (one cheap unref'd libuv timer). */
const RESOLUTION_MS = 10
/**
 * How often a window at least WINDOW_MS old is closed when no read closes
 * it, ms: a window lasts 1 to 1.25 s. Closed only by reads, it lasted until
 * the first read after a quiet spell and covered the whole spell: that read
 * got a p99 over minutes (stalls long past counted, a stall just before it
 * drowned among the quiet samples), never the last second the docs promise.
 */
const TICK_MS = WINDOW_MS / 4

let histogram: IntervalHistogram | undefined
let ticker: ReturnType<typeof setInterval> | undefined
let windowStartedAt = 0
let latenessMs = 0

// How late the deadlines' own timers fired, ms: the last SAMPLES expiries
// (a ring). These are the very timers a 504 waits for, so they say more than
// the event loop's sampling timer, which can miss short bursts.
const SAMPLES = 64
const fired = new Float64Array(SAMPLES)
const firedAt = new Float64Array(SAMPLES)
let firedCount = 0

// How long after a server's own deadline its timeout answer (504,
// DEADLINE_EXCEEDED) was handed to the OS, ms: the last SAMPLES answers. What
// the reserve really has to cover — the timer's lateness, then the write on
// a loop that may still be busy — measured end to end.
const answered = new Float64Array(SAMPLES)
const answeredAt = new Float64Array(SAMPLES)
let answeredCount = 0
// Read on every request, changed by a timed-out one or by a sample ageing
// out: sorted again on the first read after a new sample or after a second.
let answeredP99: number | undefined = 0
let answeredP99At = 0

/**
 * Whether the global `performance` is a fake one (`vi.useFakeTimers()`,
 * Jest's, @sinonjs/fake-timers replace it): `systemClock` reads the global,
 * and a deadline made before fake timers were installed and fired after
 * read fake time against a real expiry. After `vi.advanceTimersByTime(10
 * minutes)` it recorded ~595,742 ms of lateness, and two such pinned the
 * reserve at its 100 ms ceiling for the minute they count. Fake time says
 * nothing of how late this process runs: no lateness is recorded under it.
 */
function timeIsFaked(): boolean {
  return globalThis.performance !== performance
}

/** @internal Deadline calls this when its own timer fires: `ms` after `expiresAt`. */
export function recordTimerLateness(ms: number, at = performance.now()): void {
  if (timeIsFaked()) return
  fired[firedCount % SAMPLES] = ms
  firedAt[firedCount % SAMPLES] = at
  firedCount++
}

/**
 * @internal A server calls this when the timeout answer it wrote on its own
 * deadline has been flushed: `ms` after that deadline was due.
 */
export function recordAnswerLateness(ms: number, at = performance.now()): void {
  if (!Number.isFinite(ms) || timeIsFaked()) return
  answered[answeredCount % SAMPLES] = Math.max(0, ms)
  answeredAt[answeredCount % SAMPLES] = at
  answeredCount++
  answeredP99 = undefined
}

/**
 * The p99 of a ring's samples taken within the last SAMPLE_MAX_AGE_MS, ms,
 * never the largest one: of n samples sorted from smallest, the one at index
 * min(⌊0.99·n⌋, n − 2), 0 with fewer than two. So 1 sample reads 0, 2 read
 * the smaller, 3 to 64 (all a ring holds) the largest but one; were the ring
 * larger, 200 would read the largest but one too, 1,000 the tenth largest.
 *
 * Why never the largest: up to 100 samples, the plain p99 is the largest, and
 * one stall (a 300 ms CPU-bound handler that made one timeout answer late)
 * set the reserve to its 100 ms ceiling for the minute its sample counts,
 * answering every short-budget request 504 on arrival. Lateness the process
 * sees twice within the minute still counts in full.
 */
function p99Of(ring: Float64Array, takenAt: Float64Array, count: number, now: number): number {
  const n = Math.min(count, SAMPLES)
  const recent: number[] = []
  for (let i = 0; i < n; i++) if (now - takenAt[i]! <= SAMPLE_MAX_AGE_MS) recent.push(ring[i]!)
  if (recent.length < 2) return 0
  recent.sort((a, b) => a - b)
  return recent[Math.min(Math.floor(recent.length * 0.99), recent.length - 2)] ?? 0
}

/**
 * How late this process's timers run right now, in ms: the larger of the p99
 * of the event loop's delay (`perf_hooks.monitorEventLoopDelay`) over the
 * last complete window of about 1 s (1 to 1.25 s, closed at most 1.25 s
 * ago) and the p99 of how late the last 64
 * deadline timers fired within the last minute (`SAMPLE_MAX_AGE_MS`; never
 * the largest of them: the largest but one, 0 with fewer than two). A timer due at T fires around T + this on a busy
 * process; 0 until a window has been measured.
 *
 * The monitor starts on the first call (one unref'd timer every 10 ms; it
 * never keeps a process alive), and with it one unref'd timer every 250 ms
 * that closes a window 1 s old; a read closes one too. Reading costs a
 * comparison.
 */
export function timerLatenessMs(now = performance.now()): number {
  if (histogram === undefined) {
    // Made outside the context of whichever request asks first: the monitor
    // lives as long as the process and would keep that request (its body,
    // its deadline) alive with it; so would the ticker.
    histogram = runOutsideContext(() => {
      const monitor = monitorEventLoopDelay({ resolution: RESOLUTION_MS })
      monitor.enable()
      // `node:timers`' own `setInterval` (an ESM import, which fake timers
      // leave alone, as `wait`'s keep-open interval): on the faked global,
      // `vi.runAllTimers()` after a request had read the reserve fired it
      // 10,000 times and threw "Aborting after running 10000 timers", and
      // `vi.useRealTimers()` dropped it for good (no tick closed a window
      // again in that process).
      ticker = setInterval(closeLatenessWindow, TICK_MS)
      ticker.unref()
      return monitor
    })
    windowStartedAt = now
    return latenessMs
  }
  if (now - windowStartedAt >= WINDOW_MS) closeLatenessWindow(now)
  return latenessMs
}

/**
 * @internal Close the window once it is WINDOW_MS old: read its p99 and start
 * the next. The ticker calls it (see TICK_MS); `now` for tests.
 */
export function closeLatenessWindow(now = performance.now()): void {
  if (histogram === undefined || now - windowStartedAt < WINDOW_MS) return
  // A blocked loop takes few samples, and they are the long ones: any count will do.
  // The histogram counts the whole sampling period as delay; what a timer
  // suffers on top of its due time is the excess over it.
  const loop = histogram.count > 0 ? Math.max(0, histogram.percentile(99) / 1e6 - RESOLUTION_MS) : 0
  latenessMs = Math.max(loop, p99Of(fired, firedAt, firedCount, now))
  histogram.reset()
  windowStartedAt = now
}

/**
 * The reserve a server keeps back for its timeout answer when `reserveMs` is
 * not given: adaptive (`adaptiveReserveMs()`) on a clock that runs on real
 * time, the floor (10 ms) on one that moves when told (a `ManualClock`):
 * read from the machine's load, the reserve moved such a clock's 504 by
 * 10–100 ms from run to run, on a clock meant to make tests exact. So is the
 * system clock while fake timers drive it (the global `performance`
 * replaced): a test's 504 under `vi.useFakeTimers()` moved by the runner's
 * real load, 62 ms early after three slow answers. One rule for
 * @hourglass/express, @hourglass/grpc and the gateway.
 */
export function defaultReserveMs(clock: Pick<Clock, 'realTime'>): number {
  return clock.realTime === true && !timeIsFaked() ? adaptiveReserveMs() : MIN_RESERVE_MS
}

/**
 * The time to keep back before a caller's deadline so an answer written when
 * our own deadline fires still reaches the caller by theirs, bounded to
 * [10, 100] ms: the larger of
 * - twice the timer lateness this process sees (`timerLatenessMs`, p99) plus
 *   2 ms — the answer waits for a busy loop twice, for our timer to fire and
 *   for the write to be flushed, and at p99 both waits are about as long;
 * - the p99 of how late this process's last 64 timeout answers of the
 *   last minute were (deadline due → answer flushed, as the servers report
 *   it; never the largest: the largest but one, 0 with fewer than two), plus
 *   the timer lateness once more, plus 2 ms: the same thing measured end to
 *   end, which also sees the stalls the sampling timer misses — and a
 *   flushed answer is not yet read: it still waits for its reader's loop,
 *   on a busy machine about as late as our own timers.
 * What @hourglass/express and @hourglass/grpc use when `reserveMs` is not given.
 */
export function adaptiveReserveMs(now = performance.now()): number {
  const late = timerLatenessMs(now)
  if (answeredP99 === undefined || now - answeredP99At >= WINDOW_MS) {
    answeredP99 = p99Of(answered, answeredAt, answeredCount, now)
    answeredP99At = now
  }
  const answer = answeredP99
  return Math.min(
    MAX_RESERVE_MS,
    Math.max(MIN_RESERVE_MS, Math.ceil(Math.max(2 * late, answer + late) + 2)),
  )
}

/**
 * @internal Forgets every sample and stops the monitor, as in a new process:
 * for a test runner that runs many test files in one process, so one file's
 * CPU load does not set the next file's reserve.
 */
export function resetTimerLateness(): void {
  histogram?.disable()
  histogram = undefined
  if (ticker !== undefined) clearInterval(ticker)
  ticker = undefined
  windowStartedAt = 0
  latenessMs = 0
  firedCount = 0
  answeredCount = 0
  answeredP99 = 0
  answeredP99At = 0
}
