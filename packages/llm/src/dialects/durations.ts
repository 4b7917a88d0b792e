import { MAX_TIMER_MS } from '@hourglass/core'

/**
 * Duration strings providers use for waits. All return milliseconds or
 * undefined for anything malformed or negative: a bad hint means "no hint",
 * never an exception. A well-formed one too long for any timer is the
 * longest (2^31-1 ms), however many digits it has: one past what a double
 * holds (Infinity) read as no hint, and the call retried at its own backoff
 * a provider that had asked it to stay away.
 */

const GO_UNITS_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
}
const GO_DURATION = /^(?:\d+(?:\.\d+)?(?:ns|us|µs|ms|s|m|h))+$/
const GO_PART = /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g

/** Go's `time.Duration` text, as OpenAI's `x-ratelimit-reset-*` headers use it: `1s`, `6m0s`, `20ms`. */
export function parseGoDurationMs(text: string): number | undefined {
  const s = text.trim()
  if (s.length === 0 || s.length > 64 || !GO_DURATION.test(s)) return undefined
  let total = 0
  for (const match of s.matchAll(GO_PART)) total += Number(match[1]) * GO_UNITS_MS[match[2]!]!
  return finiteMs(total)
}

/** Protobuf `Duration` JSON (`"34.4s"`, `"0.5s"`), as Gemini's `RetryInfo.retryDelay` uses it. */
export function parseProtoDurationMs(text: string): number | undefined {
  const match = /^\s*(\d+(?:\.\d+)?)s\s*$/.exec(text)
  return match ? finiteMs(Number(match[1]) * 1000) : undefined
}

/**
 * A plain number of seconds (`"2"`, `"1.5"`), as a reset header or a
 * message's "try again in 1.5 seconds" carries it. Not `Retry-After`:
 * core's `retryAfterMs` reads that field, as @hourglass/fetch does.
 */
export function parseSecondsMs(text: string): number | undefined {
  const s = text.trim()
  return /^\d+(?:\.\d+)?$/.test(s) ? finiteMs(Number(s) * 1000) : undefined
}

/**
 * An RFC 3339 time (`2025-06-01T12:00:05Z`), as Anthropic's
 * `anthropic-ratelimit-*-reset` headers carry it, as milliseconds from
 * `nowMs`; past times are 0. Its offset is required: `Date.parse` reads a
 * time without one in the host's zone.
 */
export function untilRfc3339Ms(text: string, nowMs: number): number | undefined {
  const s = text.trim()
  if (!RFC_3339.test(s)) return undefined
  const at = Date.parse(s.toUpperCase().replace(' ', 'T'))
  return Number.isFinite(at) ? Math.max(0, Math.ceil(at - nowMs)) : undefined
}

const RFC_3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:[Zz]|[+-]\d{2}:\d{2})$/

function finiteMs(ms: number): number | undefined {
  return ms >= 0 ? Math.ceil(Math.min(ms, MAX_TIMER_MS)) : undefined
}
