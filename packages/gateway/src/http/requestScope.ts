import { randomUUID } from 'node:crypto'
import {
  contextKey,
  type Deadline,
  isVisibleAscii,
  readContext,
  runWithContext,
  runWithRequestId,
} from '@hourglass/core'
import type { RetryBudget } from '../llm.js'

/** What the gateway knows about one request, from arrival to the end of its response. @internal */
export interface RequestScope {
  /** `x-request-id`: the client's when valid, else a fresh UUID. In every log line and on every response. */
  readonly id: string
  /** The gateway serving it: its metrics count only their own requests' events. */
  readonly owner: object
  /** Arrival, on the gateway's clock (ms). */
  readonly startedAt: number
  /** `X-Stainless-Retry-Count` when above 0: the client is retrying a request that failed for it. */
  clientRetry: number
  /**
   * The retry budget that retry was counted against (once per request);
   * refunded when the request ends without a provider's failure.
   */
  retryCharge: RetryBudget | undefined
  /**
   * An attempt left for a provider (its record had no `sent: false`): the
   * retry's charge then stands if the request fails. One the HTTP client
   * refused for its deadline, or the adapter could not build, reached nobody.
   */
  sentUpstream?: boolean | undefined
  /** The request's deadline under the ingress one: cancelled when the client leaves or a drain times out. */
  deadline: Deadline | undefined
  /**
   * The client SDK's own timeout (openai-node's `x-stainless-timeout` from
   * the head, openai-python's `x-stainless-read-timeout` from the end of the
   * body: whichever ends first, less the ingress reserve), under `deadline`:
   * when the answer's headers must be out. The SDK's timer stops at the
   * response's headers, so it bounds a whole non-streamed answer but only a
   * stream's wait for its first token.
   */
  answerBy?: Deadline | undefined
  /**
   * openai-python's read timeout (clamped to `deadline.maxMs`), until the
   * body has been read: `answerBy` is narrowed by it then, counted from
   * then, as httpx starts it once its upload is out.
   */
  readTimeoutMs?: number | undefined
  /** The error code the client was answered with (`deadline_exceeded`, `client_closed`…), if any. */
  errorCode: string | undefined
  /**
   * The status of the error a started stream ended with (its error event, or
   * the cut at its deadline): the response's own is 200 whatever followed,
   * and a client retry's charge is judged by this one.
   */
  streamErrorStatus?: number | undefined
  /**
   * The gateway closed the connection itself (a client that stopped reading
   * its stream or its answer, at the deadline): not the client leaving, so
   * not a 499.
   */
  cut?: boolean | undefined
  /**
   * The handler wrote its whole answer (a non-streamed one). Delivered, it
   * is no expiry even when the deadline ran out while it waited its turn
   * behind an earlier answer on a pipelined connection.
   */
  answered?: boolean | undefined
  /**
   * A wait before sending in progress (a cooldown, an RPM/TPM window): its
   * metric labels and when it began, on the gateway's clock. Recorded with
   * the time actually waited once admission settles or decides again.
   */
  wait?: { attributes: Record<string, string>; startedAt: number } | undefined
}

const REQUEST = contextKey<RequestScope>('@hourglass/gateway.request')
// Also by request and response object: a body parser may run the next
// handler outside the async context it was given.
const byRequest = new WeakMap<object, RequestScope>()

export function scopeOf(req: object): RequestScope | undefined {
  return byRequest.get(req)
}

export function attachScope(req: object, scope: RequestScope): void {
  byRequest.set(req, scope)
}

/** The request in progress, read through core's one AsyncLocalStorage. */
export function currentRequest(): RequestScope | undefined {
  return readContext(REQUEST)
}

/** Runs `fn` in the request's scope; its id is also core's request id (spans carry it). */
export function runInRequest<R>(scope: RequestScope, fn: () => R): R {
  return runWithContext(REQUEST, scope, () => runWithRequestId(scope.id, fn))
}

export const REQUEST_ID_HEADER = 'x-request-id'

// Visible ASCII only: an id goes into log lines and back into a header, so
// no spaces, control characters or anything a log parser would choke on.
const MAX_ID_LENGTH = 128

/** The caller's `x-request-id` when it is 1–128 visible ASCII characters; a new UUID otherwise. */
export function requestIdFrom(header: string | string[] | undefined): string {
  return typeof header === 'string' && header.length <= MAX_ID_LENGTH && isVisibleAscii(header)
    ? header
    : randomUUID()
}
