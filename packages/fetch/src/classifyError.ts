import { isAbortError, isHourglassError } from '@hourglass/core'
import type { Attempt } from './Attempt.js'
import { BodyNotReadError, UNDICI_COLLECTED_REASON } from './errors/BodyNotReadError.js'
import { BodyTimeoutError } from './errors/BodyTimeoutError.js'
import { ConnectError } from './errors/ConnectError.js'
import { ConnectTimeoutError } from './errors/ConnectTimeoutError.js'
import { DnsError } from './errors/DnsError.js'
import { HeadersTimeoutError } from './errors/HeadersTimeoutError.js'

const CONNECT_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EHOSTUNREACH', 'ENETUNREACH'])
const DNS_CODES = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_FAIL', 'EAI_NONAME', 'EAI_NODATA'])

/**
 * Map what undici reports to our typed failures. Errors we raised ourselves
 * pass through; undici's own timeouts (from an Agent configured with its
 * limits) and OS connect errors get their Hourglass class; anything else
 * (a socket closed mid-response, a parser error) is returned as is. A body
 * undici's fetch cancelled because its Response was collected unread is
 * `BODY_NOT_READ`.
 */
export function classifyError(error: unknown, attempt: Attempt): unknown {
  if (isHourglassError(error)) return error
  const code = (error as { code?: unknown } | null)?.code
  const details = {
    elapsedMs: attempt.elapsed(),
    bytesReceived: attempt.bytesReceived,
    cause: error,
  }
  if (code === 'UND_ERR_CONNECT_TIMEOUT') return new ConnectTimeoutError(details)
  if (code === 'UND_ERR_HEADERS_TIMEOUT') return new HeadersTimeoutError(details)
  if (code === 'UND_ERR_BODY_TIMEOUT') return new BodyTimeoutError(details)
  // undici's fetch collected a Response whose body nobody read, and cancelled
  // the body with this reason, which reaches us as is (a string: its end
  // would say UNKNOWN).
  if (error === UNDICI_COLLECTED_REASON && attempt.state === 'body') {
    return new BodyNotReadError(details)
  }
  if (typeof code === 'string' && DNS_CODES.has(code) && attempt.state === 'queued') {
    const hostname = (error as { hostname?: unknown }).hostname
    return new DnsError({ ...details, hostname: typeof hostname === 'string' ? hostname : '' })
  }
  if (typeof code === 'string' && CONNECT_CODES.has(code) && attempt.state === 'queued') {
    return new ConnectError({ ...details, phaseMs: attempt.elapsed() })
  }
  if (isAbortError(error) && attempt.reason === undefined && !connected(attempt)) {
    return refusedConnect(error, details, attempt)
  }
  return error
}

/** undici's `ProxyAgent` when the proxy answers `CONNECT` with another status than 200. */
const PROXY_REFUSAL = /^Proxy response \((\d{3})\) !== 200/

/**
 * An abort before the request had a connection, that neither the deadline,
 * the caller nor a phase limit made (those set the attempt's `reason`, and
 * the caller's abort is only handed to undici with the connection): the
 * dispatcher refused to connect in abort's words — undici's `ProxyAgent`
 * fails a tunnel the proxy refused (`CONNECT` → 407, 403) with a
 * `RequestAbortedError` (`AbortError`, `UND_ERR_ABORTED`). Passed on, it read
 * as the caller's own cancel (`why: 'aborted'`, `err.name === 'AbortError'`).
 */
function refusedConnect(
  error: unknown,
  details: { elapsedMs: number; bytesReceived: number; cause: unknown },
  attempt: Attempt,
): ConnectError {
  const message = (error as { message?: unknown }).message
  const text = typeof message === 'string' && message !== '' ? message : 'aborted by the dispatcher'
  const proxy = PROXY_REFUSAL.exec(text)
  return new ConnectError({
    ...details,
    phaseMs: attempt.elapsed(),
    proxyStatus: proxy ? Number(proxy[1]) : undefined,
    refusal: proxy ? `the proxy answered CONNECT with ${proxy[1]}` : text,
  })
}

/** The request was handed its connection (undici's `onConnect`): a caller's abort may come from there on. */
function connected(attempt: Attempt): boolean {
  return attempt.state === 'headers' || attempt.state === 'body' || attempt.state === 'done'
}
