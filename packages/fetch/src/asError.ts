import { isError, messageOf } from '@hourglass/core'

/**
 * A failure's reason as an Error, for what needs one (an abort's argument):
 * an Error as it is, anything else wrapped with it as the cause. Never
 * throws: it runs in the attempt's abort listeners, on whatever the caller
 * aborted with, and a throw there (`String()` of an object with no
 * prototype; `instanceof` on a revoked Proxy) skipped the listeners after
 * it — the fetch that stops the request never settled — and reached the
 * process as uncaught.
 */
export function asError(reason: unknown): Error {
  return isError(reason) ? reason : new Error(messageOf(reason), { cause: reason })
}
