import type { Deadline } from '@hourglass/core'

/**
 * When a slice's time ran out, as `performance.now()`: the time of its
 * `hourglass.deadline.exceeded` event, as a request's is stamped when its
 * deadline fires. Core announces the overrun only at the slice's end, which in
 * dark mode (`observed`) is whenever the step finished: stamped then, a 20 ms
 * slice whose step took 400 ms said it ran out at +400 ms, drawn after the
 * request's own expiry that it came before.
 *
 * Its deadline's expiry (its allotment, or the deadline above it if that ends
 * sooner), counted on the deadline's own clock from when its span started;
 * never after `nowMs` (a test's ManualClock runs apart from real time).
 */
export function sliceRanOutAt(
  deadline: Deadline,
  allottedMs: number,
  startedAtMs: number,
  nowMs: number,
): number {
  const expiresIn = deadline.expiresAt - deadline.startedAt
  const after = Number.isFinite(expiresIn) ? expiresIn : allottedMs
  if (!Number.isFinite(after)) return nowMs
  return Math.min(nowMs, startedAtMs + Math.max(0, after))
}
