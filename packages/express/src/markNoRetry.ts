import type { ServerResponse } from 'node:http'
import { DEADLINE_EXPIRED_HEADER } from '@hourglass/core'

/**
 * The wire's "do not retry" on the deadline's answer, in both dialects
 * callers read: `x-deadline-expired: 1` for Hourglass's own clients, and
 * `x-should-retry: false` for the official OpenAI and Anthropic SDKs, which
 * retry every 5xx (twice by default) unless told not to and never read
 * ours. Without the second, an SDK caller (the one `trust:
 * ['x-stainless-timeout']` is for) sent the spent request twice more, each
 * cut at the same budget. A handler's own `x-should-retry` is replaced: it
 * was meant for the answer it did not give.
 */
export function markNoRetry(res: ServerResponse): void {
  res.setHeader(DEADLINE_EXPIRED_HEADER, '1')
  res.setHeader('x-should-retry', 'false')
}
