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
 *
 * `x-deadline-expired` says the caller's budget is gone too: only when the
 * budget that ran out was the caller's (`callersBudget`). A cap of this
 * server's own (`maxMs` below what the caller sent, `defaultMs` when it sent
 * none) leaves the caller its time: marked, a caller 200 ms into its 5 s
 * took the 504 for its own expiry and gave up. Without it an Hourglass
 * client may retry with what it has left (`@hourglass/fetch` retries a 504
 * only when told to, within its deadline); a handler's own mark goes too.
 * `x-should-retry: false` stays: the SDKs retry with no budget of their
 * own, and this server would cut each retry at the same cap.
 */
export function markNoRetry(res: ServerResponse, callersBudget = true): void {
  if (callersBudget) res.setHeader(DEADLINE_EXPIRED_HEADER, '1')
  else res.removeHeader(DEADLINE_EXPIRED_HEADER)
  res.setHeader('x-should-retry', 'false')
}
