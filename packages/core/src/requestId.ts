import { type ContextKey, readContext, refuseNonFunction, runWithContext } from './context.js'

// On a global symbol, like the context itself: two installed copies of
// @hourglass/core read the same id.
const REQUEST_ID: ContextKey<string> = { symbol: Symbol.for('@hourglass/core.requestId') }

/**
 * Run `fn` with `id` as the request id of everything it starts: the id a
 * server accepted or made for the request (`x-request-id`). Whatever reports
 * on the work — @hourglass/otel's spans, a logger — reads it with
 * `currentRequestId()`, so one id ties a request's log lines and spans
 * together without passing it down by hand.
 */
export function runWithRequestId<R>(id: string, fn: () => R): R {
  // `runWithRequestId(next)`, the id forgotten: named as this call, not runWithContext.
  refuseNonFunction('runWithRequestId', fn)
  return runWithContext(REQUEST_ID, id, fn)
}

/** The request id of the work in progress, or undefined outside any request that set one. */
export function currentRequestId(): string | undefined {
  return readContext(REQUEST_ID)
}
