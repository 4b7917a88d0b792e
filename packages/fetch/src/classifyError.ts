import { fieldOf, isAbortError, isHourglassError } from '@hourglass/core'
import type { Attempt } from './Attempt.js'
import { BodyNotReadError, UNDICI_COLLECTED_REASON } from './errors/BodyNotReadError.js'
import { BodyTimeoutError } from './errors/BodyTimeoutError.js'
import { ConnectError } from './errors/ConnectError.js'
import { ConnectTimeoutError } from './errors/ConnectTimeoutError.js'
import { DnsError } from './errors/DnsError.js'
import { HeadersTimeoutError } from './errors/HeadersTimeoutError.js'
import { unlogParserData } from './errors/unlogParserData.js'

const CONNECT_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EHOSTUNREACH', 'ENETUNREACH'])
const DNS_CODES = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_FAIL', 'EAI_NONAME', 'EAI_NODATA'])
/**
 * A peer certificate that failed verification, as Node's TLS reports it
 * (OpenSSL's X509 codes, node:tls's "X509 certificate error codes"; Node's
 * own for a name the certificate does not cover): what undici's own
 * connector fails the request with. createConnector reads the socket's
 * `authorizationError` instead.
 */
const CERTIFICATE_CODES = new Set([
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_CRL',
  'UNABLE_TO_DECRYPT_CERT_SIGNATURE',
  'UNABLE_TO_DECRYPT_CRL_SIGNATURE',
  'UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY',
  'CERT_SIGNATURE_FAILURE',
  'CRL_SIGNATURE_FAILURE',
  'CERT_NOT_YET_VALID',
  'CERT_HAS_EXPIRED',
  'CRL_NOT_YET_VALID',
  'CRL_HAS_EXPIRED',
  'ERROR_IN_CERT_NOT_BEFORE_FIELD',
  'ERROR_IN_CERT_NOT_AFTER_FIELD',
  'ERROR_IN_CRL_LAST_UPDATE_FIELD',
  'ERROR_IN_CRL_NEXT_UPDATE_FIELD',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'CERT_CHAIN_TOO_LONG',
  'CERT_REVOKED',
  'INVALID_CA',
  'PATH_LENGTH_EXCEEDED',
  'INVALID_PURPOSE',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'HOSTNAME_MISMATCH',
  'ERR_TLS_CERT_ALTNAME_INVALID',
])

/**
 * Map what undici reports to our typed failures. Errors we raised ourselves
 * pass through; undici's own timeouts (from an Agent configured with its
 * limits) and OS connect errors get their Hourglass class; anything else
 * (a socket closed mid-response, a parser error) is returned as is — a
 * parser error without the response's bytes in what is logged of it
 * (`unlogParserData`). A body undici's fetch cancelled because its Response
 * was collected unread is `BODY_NOT_READ`.
 */
export function classifyError(error: unknown, attempt: Attempt): unknown {
  if (isHourglassError(error)) return error
  const code = fieldOf(error, 'code')
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
    const hostname = fieldOf(error, 'hostname')
    return new DnsError({ ...details, hostname: typeof hostname === 'string' ? hostname : '' })
  }
  if (typeof code === 'string' && CONNECT_CODES.has(code) && attempt.state === 'queued') {
    return new ConnectError({ ...details, phaseMs: attempt.elapsed() })
  }
  // A dispatcher of the caller's (undici's own connector): a rejected
  // certificate reached the caller as Node's bare Error — not
  // `isConnectError`, no `certificateRejected` — where createConnector's
  // is both (and never retried).
  if (typeof code === 'string' && CERTIFICATE_CODES.has(code) && attempt.state === 'queued') {
    return new ConnectError({ ...details, phaseMs: attempt.elapsed(), certificateRejected: true })
  }
  if (isAbortError(error) && attempt.reason === undefined && !connected(attempt)) {
    return refusedConnect(error, details, attempt)
  }
  unlogParserData(error)
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
