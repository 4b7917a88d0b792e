import { type DeadlineSource, readDeadline } from '@hourglass/core'

/** `x-stainless-timeout`, as core's `DeadlineSource` (the header the openai SDK sends). */
export const STAINLESS_TIMEOUT: DeadlineSource = 'x-stainless-timeout'
const RETRY_COUNT = /^[0-9]{1,4}$/

/**
 * The SDK's own per-attempt timeout (`X-Stainless-Timeout`, seconds), in ms,
 * clamped to `maxMs`; undefined when absent or malformed (core's rules: a
 * whole N, truncated by the SDK, is read as N + 1 s less 1 ms, the most the
 * client's timer can be; 0 is a truncated sub-second timeout and ignored). `headers` are Node's, names
 * lower case.
 */
export function clientTimeoutMs(
  headers: Readonly<Record<string, string | string[] | undefined>>,
  maxMs: number,
): number | undefined {
  return readDeadline(headers, { sources: [STAINLESS_TIMEOUT], maxMs, lowerCaseNames: true }).ms
}

/** `X-Stainless-Retry-Count`: 0 on a first attempt, n on the SDK's n-th retry; 0 when absent or malformed. */
export function clientRetryCount(header: string | string[] | undefined): number {
  if (typeof header !== 'string') return 0
  const value = header.trim()
  return RETRY_COUNT.test(value) ? Number(value) : 0
}
