import {
  boundingDeadline,
  DEADLINE_EXPIRED_HEADER,
  type Deadline,
  enforcedRemaining,
  errorCode,
  fieldOf,
  isAbortError,
  isClientClosed,
  isDeadlineExceeded,
  retryAfterMs,
  saysDeadlineExpired,
} from '@hourglass/core'
import { isConnectError } from './errors/ConnectError.js'
import { isDnsError } from './errors/DnsError.js'
import { isHeadersTimeout } from './errors/HeadersTimeoutError.js'
import { isRedirectWithStreamBody } from './errors/RedirectWithStreamBodyError.js'
import { isTooManyRedirects } from './errors/TooManyRedirectsError.js'
import { isUnexpectedRedirect } from './errors/UnexpectedRedirectError.js'
import { isUrlRefused } from './errors/UrlRefusedError.js'
import type { ResolvedRetry } from './options.js'

/** What ended an attempt: an error, or a response status (with its headers). */
export interface Outcome {
  error?: unknown
  status?: number
  header?: (name: string) => string | null | undefined
  bytesReceived: number
  /** The failure came after the first byte of the answer: its headers, or an interim (1xx) response. */
  afterHeaders?: boolean
  /**
   * The caller's signal ended the attempt, with a reason of its own (an
   * `AbortSignal.timeout`'s `TimeoutError`, an `Error` it chose): never
   * retried, whatever that reason looks like — the caller is gone.
   */
  callerAborted?: boolean
  /**
   * The dispatcher beneath threw as the attempt was handed to it
   * (`Attempt.dispatchThrew`): nothing was sent, so the upstream said
   * nothing — an `UND_ERR_SOCKET` thrown there is no closed connection.
   * Never retried: the same dispatcher refuses the same request again.
   */
  dispatchThrew?: boolean
  /**
   * The request was redirected before it failed: a server received it and
   * answered, so a retry (which starts again at the first URL) sends it to
   * that server again.
   */
  redirected?: boolean
  /**
   * No byte of a one-shot (stream) body has been read yet: the interceptor
   * says so of a stream undici's dispatch has not begun to read (it reads
   * one only once connected). Only a refused connect goes on it: nothing
   * was sent, so the stream can go with the retry whole, as undici's own
   * RetryHandler sends a body it has not disturbed.
   */
  bodyUnread?: boolean
}

export interface RetryState {
  retry: ResolvedRetry | false
  /** Safe to send twice: idempotent method or an Idempotency-Key header. */
  repeatable: boolean
  /** The request body can be sent again (not a one-shot stream). */
  replayable: boolean
  /** Rules already used once: each rule retries at most once per call. */
  used: Set<string>
  deadline: Deadline | undefined
  /**
   * Under a budget on trial: the enforcing deadline the call began under
   * (`OutboundCall.bound`), which plans its retries once the trial is
   * disposed: it then bounds nothing, and read off it alone a retry was
   * planned as if no time ran out.
   */
  bound?: Deadline | undefined
  minBudgetMs: number
}

export type RetryDecision =
  | { retry: true; rule: string; reason: string; delayMs: number }
  | { retry: false; reason: string; why: string }
  | { retry: false; reason: undefined; why: undefined }

/**
 * The evidence-based retry rules (DESIGN.md, "Deadlines, not timeouts"), our
 * own because no kept library decides on *evidence* (bytes received, how fast
 * a connect failed, the upstream's deadline marker) rather than on counts:
 * - a connect failure in < 50 ms → once (after a redirect, only if safe to
 *   repeat: the first hop reached a server);
 * - a headers timeout with 0 bytes, or the connection closed (FIN or RST)
 *   before any byte of the answer — the stale keep-alive race — → once (one
 *   rule for both), if the request is safe to repeat (`emptyRead`:
 *   `'idempotent'` | `true` | `false`);
 * - anything after the first byte → never; a 504 with `x-deadline-expired: 1`
 *   → never; a listed status → once, if safe to repeat, after `Retry-After`
 *   (never when the server asks for more than `maxRetryAfterMs`);
 * - an HTTP/2 stream the server refused (RST_STREAM REFUSED_STREAM) → once,
 *   any method: the server says it did not process the request (after a
 *   redirect, only if safe to repeat: the first hop reached a server);
 * - a name that does not resolve → never (it is not a refused connect);
 * - more redirects than fetch follows → never (a retry walks the same chain);
 * - a redirect fetch cannot follow with a stream body → never (a retry
 *   cannot send the body either);
 * - never when what would be left is under `minBudgetMs`.
 */
export function decideRetry(outcome: Outcome, state: RetryState): RetryDecision {
  const { error, status } = outcome
  if (error === undefined && status === undefined) {
    return { retry: false, reason: undefined, why: undefined }
  }
  const reason = error !== undefined ? errorCode(error) : `HTTP_${status}`
  const no = (why: string): RetryDecision => ({ retry: false, reason, why })

  if (
    error === undefined &&
    status === 504 &&
    saysDeadlineExpired(outcome.header?.(DEADLINE_EXPIRED_HEADER))
  ) {
    return no('upstream-deadline')
  }
  if (isDeadlineExceeded(error)) return no('no-budget')
  if (isClientClosed(error) || isAbortError(error)) return no('aborted')
  if (status !== undefined && status < 400)
    return { retry: false, reason: undefined, why: undefined }
  const policy = state.retry
  if (policy === false) return no('retry-disabled')
  if (outcome.callerAborted || outcome.dispatchThrew) return no('not-retryable')

  let rule: string
  let delayMs = 0
  // Before the byte count: whether the last redirect had a body or not, a
  // retry walks the same chain again (the same answer, for the same reason).
  // A redirect `redirect: 'error'` refused: the server answers the same again.
  // So does one to a URL fetch refuses (a bad port, a scheme, a Location that
  // is no URL): it said `after-first-byte` when the redirect had a body.
  if (isTooManyRedirects(error) || isUnexpectedRedirect(error) || isUrlRefused(error)) {
    return no('not-retryable')
  }
  // The body is a stream: no retry could send it either (the redirect's body
  // bytes, if any, are not this request's answer).
  if (isRedirectWithStreamBody(error)) return no('body-not-replayable')
  if (error !== undefined && (outcome.bytesReceived > 0 || outcome.afterHeaders)) {
    return no('after-first-byte')
  }
  if (isDnsError(error)) return no('dns-failure')
  if (isConnectError(error)) {
    // A rejected certificate is the peer's answer, not a refused connect: it comes back the same.
    // So is a proxy's refusal of the tunnel (407, 403): it answers the same again. So is a
    // handshake the peer's TLS refused (OpenSSL's `ERR_SSL_*`: an `https:` URL on a plain-HTTP
    // port, no protocol or cipher in common): fast, it was retried for the same bytes back.
    if (error.certificateRejected || error.proxyStatus !== undefined || tlsRefused(error.cause)) {
      return no('not-retryable')
    }
    if (!error.fast) return no('slow-connect-failure')
    if (!policy.fastConnectFailure) return no('retry-disabled')
    // The refused connect was to a redirect target: the request itself
    // reached the first server, so it is sent again only if safe to repeat.
    if (outcome.redirected && policy.emptyRead !== true && !state.repeatable) {
      return no('not-idempotent')
    }
    rule = 'fast-connect'
  } else if (isRefusedStream(error)) {
    // Off only under a factory's `retry: false` that a call's own rules went over.
    if (!policy.refusedStream) return no('retry-disabled')
    // Refused by a redirect's target: the request itself reached the first server.
    if (outcome.redirected && policy.emptyRead !== true && !state.repeatable) {
      return no('not-idempotent')
    }
    rule = 'refused-stream'
  } else if (isHeadersTimeout(error) || isClosedBeforeAnswer(error)) {
    if (policy.emptyRead === false) return no('retry-disabled')
    if (policy.emptyRead === 'idempotent' && !state.repeatable) return no('not-idempotent')
    rule = 'empty-read'
  } else if (error === undefined && status !== undefined && policy.statuses.includes(status)) {
    if (policy.emptyRead !== true && !state.repeatable) return no('not-idempotent')
    rule = 'status'
    // Absent or unreadable, no wait: fetch has no backoff of its own.
    delayMs = retryAfterMs(outcome.header?.('retry-after'), Date.now()) ?? 0
    // An unbounded Retry-After (a day, on a 503) is a "not now", not a retry.
    if (delayMs > policy.maxRetryAfterMs) return no('retry-after-too-long')
  } else {
    return no('not-retryable')
  }
  if (state.used.has(rule)) return no('already-retried')
  // A stream no one has read from yet goes with a refused connect's retry as
  // it is: refused for its body, a POST of a stream to a service whose first
  // address refused failed where the same POST of a string went to the second.
  if (!state.replayable && !(rule === 'fast-connect' && outcome.bodyUnread === true)) {
    return no('body-not-replayable')
  }
  // An observe-only deadline decides nothing: dark mode retries as without it.
  // A trial disposed since the call began: the bound it began under (`bound`).
  const left =
    state.bound === undefined
      ? enforcedRemaining(state.deadline)
      : (boundingDeadline(state.deadline) ?? state.bound).remaining()
  // Nothing at all left once the wait is over (`minBudgetMs: 0`, a
  // Retry-After that ends exactly at the deadline): the wait would end with
  // the deadline, and the retry it announced could never be sent — the
  // caller waited out the Retry-After for a DEADLINE_EXCEEDED where the
  // answer in hand (the 503) was its to read at once.
  if (left - delayMs < state.minBudgetMs || left - delayMs <= 0) return no('no-budget')
  return { retry: true, rule, reason, delayMs }
}

/**
 * undici's codes for a connection that ended under a request it had written
 * (a refused or reset connect is a `ConnectError` by then): "other side
 * closed" (`UND_ERR_SOCKET`, a FIN), `ECONNRESET` (an RST), `EPIPE` (closed
 * while the request was written). Before the first byte of an answer
 * (checked by the caller) it is the stale keep-alive race: the server closed
 * an idle socket as the request went out on it. undici's RetryHandler
 * retries these codes for idempotent methods, and Node's http docs advise
 * retrying an `ECONNRESET` on a reused socket; the server may still have
 * read and acted on the request, so a method not safe to repeat is retried
 * only under `emptyRead: true`, as for a silent server.
 */
const CLOSED_CODES: ReadonlySet<unknown> = new Set(['UND_ERR_SOCKET', 'ECONNRESET', 'EPIPE'])

function isClosedBeforeAnswer(error: unknown): boolean {
  return CLOSED_CODES.has(fieldOf(error, 'code'))
}

/**
 * Node's error for an HTTP/2 stream the server reset with REFUSED_STREAM
 * (`ERR_HTTP2_STREAM_ERROR`, its message naming the code: the error carries
 * no other field for it). RFC 9113 §8.7: such a request was not processed
 * and can be retried safely, whatever its method. Any other stream error
 * (INTERNAL_ERROR, CANCEL, …) may come after the server acted: not retried.
 */
function isRefusedStream(error: unknown): boolean {
  if (fieldOf(error, 'code') !== 'ERR_HTTP2_STREAM_ERROR') return false
  const message = fieldOf(error, 'message')
  return typeof message === 'string' && message.endsWith(' NGHTTP2_REFUSED_STREAM')
}

/** A TLS handshake failure OpenSSL reports (`ERR_SSL_WRONG_VERSION_NUMBER`, a handshake alert). */
function tlsRefused(cause: unknown): boolean {
  const code = errorCode(cause)
  return typeof code === 'string' && code.startsWith('ERR_SSL_')
}
