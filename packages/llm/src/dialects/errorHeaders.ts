import { firstMember, MAX_TIMER_MS, retryAfterMs } from '@hourglass/core'
import { parseGoDurationMs, parseSecondsMs, untilRfc3339Ms } from './durations.js'

/**
 * The one place response headers are read for error decisions, shared by
 * every dialect: `x-should-retry`, `retry-after-ms`, `Retry-After`, and the
 * rate-limit reset headers of OpenAI (and its imitators) and Anthropic.
 */

/** Fetch `Headers`, or a plain record such as Node's `IncomingHttpHeaders` or undici's. */
export type HeaderInput =
  | Headers
  | Readonly<Record<string, string | readonly string[] | number | undefined>>

export function headerValue(headers: HeaderInput | undefined, name: string): string | undefined {
  if (headers === undefined || headers === null) return undefined
  try {
    if (typeof (headers as Headers).get === 'function') {
      return (headers as Headers).get(name) ?? undefined
    }
    const record = headers as Readonly<Record<string, unknown>>
    const lower = name.toLowerCase()
    // undici and Node give lower-case names: look there first.
    const direct = Object.hasOwn(record, lower) ? record[lower] : undefined
    if (typeof direct === 'string') return direct
    for (const key of Object.keys(record)) {
      if (key.toLowerCase() !== lower) continue
      const v = record[key]
      if (typeof v === 'string') return v
      if (typeof v === 'number') return String(v)
      if (Array.isArray(v)) return v.filter((x) => typeof x === 'string').join(', ')
    }
  } catch {
    // A hostile Headers-like object: treat as absent.
  }
  return undefined
}

/**
 * `x-should-retry: true|false` (Anthropic and OpenAI send it); anything else
 * is absent. Sent twice, its first member: a `false` joined with itself
 * still stops the retry.
 */
export function shouldRetryHeader(headers: HeaderInput | undefined): boolean | undefined {
  const raw = headerValue(headers, 'x-should-retry')
  const v = raw === undefined ? undefined : firstMember(raw).toLowerCase()
  return v === 'true' ? true : v === 'false' ? false : undefined
}

/**
 * The wait the response asks for, most precise source first:
 * `retry-after-ms`, then `Retry-After` (seconds or HTTP-date), then — only
 * for rate limits, where they describe the failure — reset headers. Capped at
 * the largest timer Node can set, and no lower: this is what the provider
 * asked, kept as asked so a reason (and a gateway's own `Retry-After`) can
 * name it. How long anyone actually waits is policy, decided later against
 * `maxRetryAfterMs` (60 s by default): `decideRetry` does not retry on a
 * longer hint, admission caps the cooldown it starts.
 */
export function retryAfterFromHeaders(
  headers: HeaderInput | undefined,
  options: { nowMs: number; useResetHeaders: boolean },
): number | undefined {
  const ms = headerValue(headers, 'retry-after-ms')
  const fromMs = ms === undefined ? undefined : parseMs(ms)
  if (fromMs !== undefined) return cap(fromMs)
  // Seconds or an HTTP-date, read as @hourglass/fetch reads it.
  const wait = retryAfterMs(headerValue(headers, 'retry-after'), options.nowMs)
  if (wait !== undefined) return cap(wait)
  if (!options.useResetHeaders) return undefined
  const reset = resetWaitMs(headers, options.nowMs)
  return reset === undefined ? undefined : cap(reset)
}

/** [reset header, matching remaining header, parser] */
const RESET_HEADERS: ReadonlyArray<readonly [string, string, 'go' | 'date']> = [
  ['x-ratelimit-reset-requests', 'x-ratelimit-remaining-requests', 'go'],
  ['x-ratelimit-reset-tokens', 'x-ratelimit-remaining-tokens', 'go'],
  ['anthropic-ratelimit-requests-reset', 'anthropic-ratelimit-requests-remaining', 'date'],
  ['anthropic-ratelimit-tokens-reset', 'anthropic-ratelimit-tokens-remaining', 'date'],
  ['anthropic-ratelimit-input-tokens-reset', 'anthropic-ratelimit-input-tokens-remaining', 'date'],
  [
    'anthropic-ratelimit-output-tokens-reset',
    'anthropic-ratelimit-output-tokens-remaining',
    'date',
  ],
]

/**
 * Several limits report resets at once (requests in 1 s, tokens in 6 min).
 * The ones whose `remaining` is 0 are the ones that failed us, and we must
 * wait for the longest of those. Without `remaining` information the
 * shortest reset is the honest guess: waiting for the longest would make a
 * caller with a short deadline give up on a limit that was never hit.
 */
function resetWaitMs(headers: HeaderInput | undefined, nowMs: number): number | undefined {
  const exhausted: number[] = []
  const unknown: number[] = []
  for (const [resetName, remainingName, kind] of RESET_HEADERS) {
    const raw = headerValue(headers, resetName)
    if (raw === undefined) continue
    // A reset time is RFC 3339 (Anthropic's); an HTTP-date or seconds are read too.
    const first = firstMember(raw)
    // An HTTP-date has a comma of its own: core's reader takes the whole field.
    const wait =
      kind === 'go'
        ? (parseGoDurationMs(first) ?? parseSecondsMs(first))
        : (untilRfc3339Ms(first, nowMs) ?? retryAfterMs(raw, nowMs) ?? parseSecondsMs(first))
    if (wait === undefined) continue
    const remainingRaw = headerValue(headers, remainingName)
    const remaining = remainingRaw === undefined ? undefined : firstMember(remainingRaw)
    if (remaining === '0') exhausted.push(wait)
    else if (remaining === undefined || remaining === '') unknown.push(wait)
  }
  if (exhausted.length > 0) return Math.max(...exhausted)
  if (unknown.length > 0) return Math.min(...unknown)
  return undefined
}

function parseMs(text: string): number | undefined {
  const s = firstMember(text)
  if (!/^\d+(?:\.\d+)?$/.test(s)) return undefined
  // Any number of digits: past what a double holds is the longest wait (see durations.ts).
  return Math.ceil(Math.min(Number(s), MAX_TIMER_MS))
}

function cap(ms: number): number {
  return Math.min(ms, MAX_TIMER_MS)
}
