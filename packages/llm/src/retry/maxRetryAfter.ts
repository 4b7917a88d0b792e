/**
 * The longest server-requested wait (`retry-after-ms`, `Retry-After`, reset
 * headers, Gemini's `retryDelay`) that is waited out or turned into a
 * cooldown, in ms: 60 s, as @hourglass/fetch's `retry.maxRetryAfterMs`. A
 * provider (or a proxy in front of it) that asks for a day is saying "not
 * now", not "retry in a day": one such answer must not hold a call, or a
 * process, for that long.
 */
export const DEFAULT_MAX_RETRY_AFTER_MS = 60_000

/** A server's hint as the policy reads it: a number ≥ 0, else none (NaN, negative, absent). */
export function serverHintMs(retryAfterMs: number | undefined): number | undefined {
  return typeof retryAfterMs === 'number' && retryAfterMs >= 0 ? retryAfterMs : undefined
}

/** `86400000` → `86400 s`, `1500` → `1.5 s`: how a reason names a server's wait. */
export function hintSeconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(3))} s`
}
