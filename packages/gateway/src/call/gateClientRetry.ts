import { GatewayRequestError } from '../http/GatewayRequestError.js'
import { currentRequest, scopeOf } from '../http/requestScope.js'
import type { ModelAdapter, RetryBudgetRegistry } from '../llm.js'
import type { GatewayMetrics } from '../metrics/GatewayMetrics.js'

/**
 * A client's retry (`X-Stainless-Retry-Count > 0`: the official SDKs send it
 * on every retry) is counted once, before anything is sent, against the
 * first provider of the list whose retry budget still allows a retry (above
 * half, gRPC's rule), as the failure that made the client retry. Every
 * provider of the list whose budget is spent is left out of this request,
 * wherever the list names it: the retry goes to the others instead of adding
 * load to a failing one.
 * When every provider's budget is spent the client gets a 503
 * `retry_budget_exhausted` with `x-should-retry: false` at once, and
 * nothing is sent anywhere.
 *
 * The charge stands only if the retry fails at a provider too (a 5xx after
 * an attempt was sent, a stream's error event's included): `refundClientRetry` takes it back when the request
 * ends otherwise — answered, refused as the client's own bad request, or
 * never sent (its deadline spent, admission refused, every attempt refused
 * by the HTTP client before it left: `sent: false`). Without the refund
 * any client, with no credentials, drained every provider's budget by
 * sending the header on requests that reached nobody, and the gateway's own
 * retries stopped for everyone.
 *
 * First attempts pass untouched, and so does everything when the gateway
 * runs without retry budgets.
 */
export function gateClientRetry(
  models: readonly ModelAdapter[],
  retryBudgets: RetryBudgetRegistry | undefined,
  metrics: GatewayMetrics,
): readonly ModelAdapter[] {
  const scope = currentRequest()
  if (retryBudgets === undefined || scope === undefined) return models
  if (scope.clientRetry === 0 || scope.retryCharge !== undefined) return models
  // Every provider of the list whose budget is spent is left out, not only
  // those before the one admitted: a later model of a spent provider (a
  // smaller model of it as the last fallback) took the retry to the failing
  // provider after all, and its 5xx made the charge on the admitted one stand.
  // Decided before the charge, which may itself spend the admitted budget.
  const spent: string[] = []
  const open = models.filter((adapter) => {
    // The bucket callModel charges this provider's own retries to.
    if (retryBudgets.forProvider(adapter).canRetry()) return true
    // Once per provider: a list may name one twice (a smaller model of it
    // as the fallback), whose one budget refused this retry once per model,
    // and one request counted as two refusals.
    if (!spent.includes(adapter.name)) {
      metrics.clientRetry(adapter.name, 'refused')
      spent.push(adapter.name)
    }
    return false
  })
  const first = open[0]
  if (first !== undefined) {
    const budget = retryBudgets.forProvider(first)
    budget.recordFailure()
    scope.retryCharge = budget
    metrics.clientRetry(first.name, 'admitted')
    return open
  }
  throw new GatewayRequestError({
    status: 503,
    type: 'server_error',
    errorCode: 'retry_budget_exhausted',
    message: `the client retried, and the retry budget of every provider for this model is spent (${spent.join(', ')}); not sent, to avoid adding load to a failing provider`,
  })
}

/**
 * At the end of a request: refund the client retry's charge unless the
 * request failed at a provider (`status` ≥ 500 with an attempt sent,
 * `sentUpstream`). A 499 (the client left again) is no provider's failure
 * either, nor a 504 whose attempts the HTTP client all refused unsent (under
 * its `minBudgetMs`): counted as attempted, its charge stood though nothing
 * reached the provider, and two such retries left a budget of 4 at half —
 * the next client retry a 503 from a provider never asked.
 */
export function refundClientRetry(req: object, status: number): void {
  const scope = scopeOf(req)
  const budget = scope?.retryCharge
  if (budget === undefined || scope === undefined) return
  scope.retryCharge = undefined
  // A stream's status is 200 however it ended: one broken after its first
  // token by the provider (a 502 event) failed there as much as a 502 reply.
  const failedWith = status === 200 ? (scope.streamErrorStatus ?? status) : status
  if (failedWith >= 500 && scope.sentUpstream === true) return
  budget.refundFailure()
}

/** Notes on the request in progress that an attempt was sent (`sentUpstream`). */
export function noteSent(record: { sent?: false | undefined }): void {
  if (record.sent === false) return
  const scope = currentRequest()
  if (scope !== undefined) scope.sentUpstream = true
}
