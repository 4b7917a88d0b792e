import { shown } from '../../fieldProblems.js'
import { checkReplyFields } from '../checkReplyFields.js'

/**
 * A builder's reply, checked as `enqueue` checks one, where the builder is
 * called: unchecked, `serverError({ status: 1000 })` or an `afterTokens` of
 * -1 was refused only at `enqueue`, and inside a script function only when
 * the fake answered (a 500 `reply_failed`), not where the test wrote it.
 */
export function checkedReply<T extends object>(where: string, reply: T): T {
  checkReplyFields(where, reply)
  return reply
}

/**
 * `x-should-retry` as the SDKs read it (`'true'` or `'false'`): any other
 * value (`'no'`, `'0'`) they ignore, and a test of "the server said not to
 * retry" saw a retry.
 */
export function shouldRetryHeader(where: string, value: unknown): Record<string, string> {
  if (value === undefined) return {}
  if (typeof value !== 'boolean') {
    throw new TypeError(`${where}: shouldRetry must be a boolean, got ${shown(value)}`)
  }
  return { 'x-should-retry': String(value) }
}
