import type { Deadline } from '@hourglass/core'

/**
 * When a slice's or a job attempt's time ran out, as `performance.now()`: the
 * time of its `hourglass.deadline.exceeded` event, as a request's is stamped
 * when its deadline fires. Core announces a slice's overrun only at the
 * slice's end, and bullmq an attempt's only at the attempt's end; in dark
 * mode (`observed`), or for a job that ignored its aborted signal, that is
 * whenever the work finished: stamped then, a 20 ms slice whose step took
 * 400 ms said it ran out at +400 ms, drawn after the request's own expiry
 * that it came before, and a job attempt given 20 ms that returned at
 * +200 ms said so at +200 ms.
 *
 * Its deadline's expiry (a slice's allotment, or the deadline above it if
 * that ends sooner; an attempt's remaining time when it started), counted on
 * the deadline's own clock from when its span started (`startedAtMs`);
 * `fallbackMs` when that expiry is unknown. Never after `nowMs`. The offset
 * is the deadline's clock's, the start real time: under a test's ManualClock
 * the event is placed at the clock's expiry offset from the span's real
 * start, not when the clock was moved — a 20 ms slice whose clock was
 * advanced 100 ms of real time into it has its event at +20 ms.
 */
export function ranOutAt(
  deadline: Deadline,
  fallbackMs: number,
  startedAtMs: number,
  nowMs: number,
): number {
  const expiresIn = deadline.expiresAt - deadline.startedAt
  const after = Number.isFinite(expiresIn) ? expiresIn : fallbackMs
  if (!Number.isFinite(after)) return nowMs
  return Math.min(nowMs, startedAtMs + Math.max(0, after))
}
