import { type IntervalHistogram, monitorEventLoopDelay } from 'node:perf_hooks'

/** Bounds of the adaptive reserve, ms: never less than the old fixed default, never more than a tenth of a second. */
export const MIN_RESERVE_MS = 10
export const MAX_RESERVE_MS = 100
/** How long one window of event-loop delay samples lasts before its p99 is read, ms. */
const WINDOW_MS = 2000
/** The histogram's sampling period, ms (one cheap unref'd libuv timer). */
const RESOLUTION_MS = 10

let histogram: IntervalHistogram | undefined
let windowStartedAt = 0
let latenessMs = 0

/**
 * How late this process's timers run right now: the p99 of the event loop's
 * delay (`perf_hooks.monitorEventLoopDelay`) over the last complete window of
 * about 2 s, in ms. A timer due at T fires around T + this on a busy
 * process; 0 until a window has been measured.
 *
 * The monitor starts on the first call (one unref'd timer every 10 ms; it
 * never keeps a process alive) and is read lazily: no timer of ours.
 */
export function timerLatenessMs(now = performance.now()): number {
  if (histogram === undefined) {
    histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS })
    histogram.enable()
    windowStartedAt = now
    return latenessMs
  }
  if (now - windowStartedAt >= WINDOW_MS) {
    // A blocked loop takes few samples, and they are the long ones: any count will do.
    if (histogram.count > 0) {
      // The histogram counts the whole sampling period as delay; what a timer
      // suffers on top of its due time is the excess over it.
      latenessMs = Math.max(0, histogram.percentile(99) / 1e6 - RESOLUTION_MS)
    }
    histogram.reset()
    windowStartedAt = now
  }
  return latenessMs
}

/**
 * The time to keep back before a caller's deadline so an answer written when
 * our own deadline fires still reaches the caller by theirs: the timer
 * lateness this process sees (`timerLatenessMs`, p99) plus 2 ms to write and
 * flush, bounded to [10, 100] ms. What @hourglass/express and
 * @hourglass/grpc use when `reserveMs` is not given.
 */
export function adaptiveReserveMs(now?: number): number {
  const late = timerLatenessMs(now)
  return Math.min(MAX_RESERVE_MS, Math.max(MIN_RESERVE_MS, Math.ceil(late + 2)))
}
