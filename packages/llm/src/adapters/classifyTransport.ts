import type { Deadline } from '@hourglass/core'
import { isDeadlineExceeded } from '@hourglass/core'
import { cutRedacted } from '../dialects/classifyError.js'
import { ProviderError } from '../errors/ProviderError.js'
import { isProviderReplyError } from '../errors/ProviderReplyError.js'
import type { ErrorKind } from '../types.js'

/**
 * How long after sending a close before the response headers is read as a
 * cut generation rather than a connection the server had closed as the
 * request arrived: a keep-alive race ends within a round trip, while a
 * provider's headers come after its time to first token — for a
 * non-streamed request, after the whole generation: seconds.
 */
export const CLOSED_AFTER_WAIT_MS = 1000

/**
 * Anything thrown while sending or reading, as a `ProviderError` — or the
 * thrown value itself when the attempt was ended on purpose (the deadline,
 * the caller's signal, a first-token timer): those are not the provider's
 * failure and the caller knows the reason better. `answered` is the 2xx
 * status of a reply whose body was being read when it failed.
 */
export function classifyThrown(
  thrown: unknown,
  context: {
    provider: string
    model: string
    signal: AbortSignal
    deadline: Deadline | undefined
    /** The adapter's secrets, redacted from the message (`redactableKeys`). */
    keys?: readonly string[] | undefined
    /** ms from sending the request to the failure, when measured. */
    waitedMs?: number | undefined
    /**
     * The provider's request id header of the answer being read, once one
     * came: on the failure (`ProviderError.providerRequestId`).
     */
    requestId?: string | undefined
  },
  answered?: number,
  streamed = false,
): { error: ProviderError } | { rethrow: unknown } {
  if (context.signal.aborted) return { rethrow: context.signal.reason }
  // An observed deadline (dark mode) that ran out is done with no reason:
  // it ended nothing, and the failure is judged as without it (rethrown, the
  // call rejected with \`undefined\`).
  if (context.deadline?.done && context.deadline.reason !== undefined)
    return { rethrow: context.deadline.reason }
  if (isDeadlineExceeded(thrown)) return { rethrow: thrown }
  if (thrown instanceof ProviderError) return { error: thrown }
  const { provider, model, requestId } = context
  if (isProviderReplyError(thrown)) {
    return {
      error: new ProviderError({ provider, model, error: thrown.error, cause: thrown, requestId }),
    }
  }
  const code = (thrown as { code?: unknown } | null)?.code
  // A read timeout (no headers, or the body went quiet) comes after the
  // request reached the provider: the generation may well be running, and
  // billed. Resending it to the same model pays again for the same answer
  // (providers do not dedupe chat completions by Idempotency-Key), so it is
  // not retried; falling back to another configured model still may be.
  // A 2xx reply cut while its body was read is the same case, surer still: a
  // whole answer comes after the whole generation. Connect-phase failures
  // sent nothing and stay retryable. So does a stream cut after its 2xx
  // (`streamed`), even before its first token: the provider had taken the
  // request and started the generation, which it may bill.
  const readTimeout = code === 'HEADERS_TIMEOUT' || code === 'BODY_TIMEOUT'
  // The connection closed before any response headers, a while after the
  // request left (a proxy's or load balancer's idle cut of a long
  // generation): the same case as the headers timeout, from the other side.
  // A close at once (a keep-alive connection the server had just closed)
  // reached no generation, and stays retryable, as do connect failures.
  const closedAfterWait =
    answered === undefined &&
    (code === 'UND_ERR_SOCKET' || code === 'ECONNRESET') &&
    (context.waitedMs ?? 0) >= CLOSED_AFTER_WAIT_MS
  // More header bytes than the HTTP client reads (undici's limit): the
  // headers of a whole answer come after the whole generation, so a resend
  // pays for it again and meets the same headers. Another model may answer.
  const overflowed = code === 'UND_ERR_HEADERS_OVERFLOW' && answered === undefined
  const kind: ErrorKind = readTimeout ? 'timeout' : 'network'
  const text = cutRedacted(
    thrown instanceof Error ? thrown.message : String(thrown),
    500,
    context.keys ?? [],
  )
  // undici refused what it was asked to send (a header value with a line
  // break, a header name that is no token, a URL that does not parse…):
  // nothing left, and the same request is refused the same way every time —
  // not worth a retry or a retry-budget token. Another model (another
  // adapter) may still answer.
  const invalid = isRefusedArgument(code) && answered === undefined
  // The adapter's HTTP client was closed (`adapter.close()`, its fetch's
  // `close()`: `UND_ERR_CLOSED` while the close waits for requests in
  // flight, `UND_ERR_DESTROYED` once it is done): the same case. Every
  // attempt on this adapter is refused the same way, so retrying it only
  // waited out the backoff before the next model, and spent tokens of the
  // retry budget the provider's live adapters share (a config reload
  // closing old adapters while calls that hold them are between attempts).
  const closedClient = isClosedClient(code) && answered === undefined
  const refused = invalid || closedClient
  const message = invalid
    ? `the HTTP client refused to send the request (${text}); not retried: it would be refused the same way every time — check the adapter's baseURL, apiKey, headers and fetch`
    : closedClient
      ? `the adapter's HTTP client is closed (${text}): the request was not sent; not retried on this adapter, which refuses every request once closed (\`close()\`)`
      : overflowed
        ? `the reply's headers were more than the HTTP client reads (${text}); not resent to this model: they came after the generation, which the provider may have billed, and would come the same again`
        : closedAfterWait
          ? `the connection closed ${Math.round(context.waitedMs ?? 0)} ms after the request was sent, before any response headers (${text}); not resent to this model: the provider may have generated, and billed, it`
          : answered === undefined
            ? text
            : streamed
              ? `the ${answered} stream broke off while it was read (${text}); not resent to this model: the provider had started the generation, and may bill it`
              : `the ${answered} reply broke off while its body was read (${text}); not resent to this model: the provider generated, and billed, it`
  return {
    error: new ProviderError({
      provider,
      model,
      error: {
        kind,
        retryable:
          !readTimeout && !refused && !closedAfterWait && !overflowed && answered === undefined,
        status: answered ?? 0,
        message,
      },
      cause: thrown,
      requestId,
    }),
  }
}

/**
 * undici's codes for a request its dispatcher refuses because it was
 * closed (`ClientClosedError`) or destroyed (`ClientDestroyedError`).
 */
export function isClosedClient(code: unknown): boolean {
  return code === 'UND_ERR_CLOSED' || code === 'UND_ERR_DESTROYED'
}

/**
 * The codes of a request the HTTP client refuses as it is given, before
 * sending anything: undici's `InvalidArgumentError`, and Node's
 * `ERR_INVALID_URL` for a URL that does not parse (a `baseURL` without its
 * scheme, from an adapter of your own or a `fetch` that builds URLs: the
 * built-in adapters refuse one when they are made). Retried, each attempt
 * failed the same way as a retryable `network` failure, charging the retry
 * budget.
 */
export function isRefusedArgument(code: unknown): boolean {
  return code === 'UND_ERR_INVALID_ARG' || code === 'ERR_INVALID_URL'
}
