import { IngressRequest } from './IngressRequest.js'

/**
 * Whether the budget of the request's deadline is the one its caller sent:
 * true for a trusted deadline header's (less `reserveMs`), false for a cap
 * of this server's own (`maxMs` below what the caller sent, `defaultMs`
 * when it sent none this server trusts), undefined when `deadline()` is not
 * in the request's chain. `deadline()`'s own answers send
 * `x-deadline-expired: 1` ("the caller's budget is gone too: do not retry")
 * only when it is true; an app that writes its own 504 needs the same word
 * (it answered every cap of the server's with it, and its caller gave up
 * with its own time left).
 */
export function callersBudget(req: object): boolean | undefined {
  return IngressRequest.of(req)?.callersBudget
}
