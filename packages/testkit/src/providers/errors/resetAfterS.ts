/**
 * Marks an error reply whose `anthropic-ratelimit-*-reset` timestamps are
 * "this many seconds after it is sent": the fake stamps them from its own
 * clock as it sends the reply (the wall time it started at plus the clock's
 * progress, so a `ManualClock` advanced an hour resets an hour later), not
 * from `Date.now()` when the script was written. `Symbol.for`: a reply built
 * by one loaded copy of testkit (its dist) and sent by another (its source)
 * keeps the mark.
 */
export const RESET_AFTER_S: unique symbol = Symbol.for('@hourglass/testkit.resetAfterS')

/** RFC 3339 in whole seconds, as Anthropic writes it; rounded up so the reset is never before the wait. */
export function rfc3339Reset(nowMs: number, afterS: number): string {
  return new Date(Math.ceil((nowMs + afterS * 1000) / 1000) * 1000)
    .toISOString()
    .replace(/\.\d{3}Z$/, 'Z')
}

/** `headers` with every `anthropic-ratelimit-*-reset` stamped from `nowMs`. */
export function stampResets(
  headers: Record<string, string>,
  nowMs: number,
  afterS: number,
): Record<string, string> {
  const stamped = { ...headers }
  for (const name of Object.keys(stamped)) {
    if (/^anthropic-ratelimit-.+-reset$/.test(name)) stamped[name] = rfc3339Reset(nowMs, afterS)
  }
  return stamped
}
