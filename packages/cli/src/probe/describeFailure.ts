import { maxHeaderSize } from 'node:http'
import { isDeadlineExceeded } from '@hourglass/core'
import {
  isBodyTimeout,
  isConnectError,
  isConnectTimeout,
  isDnsTimeout,
  isHeadersTimeout,
} from '@hourglass/fetch'
import { printable } from '../printable.js'

const OS_MEANING: Record<string, string> = {
  ENOTFOUND: 'no such name',
  EAI_AGAIN: 'the resolver did not answer; try again',
  ECONNREFUSED: 'nothing listens there',
  ECONNRESET: 'the connection was reset',
  EHOSTUNREACH: 'no route to the host',
  ENETUNREACH: 'no route to the network',
}

// What the usual TLS failures mean, for the one line a probe prints (Node's
// and OpenSSL's codes: the TLS socket's error, which undici passes on).
const TLS_MEANING: Record<string, string> = {
  ERR_SSL_WRONG_VERSION_NUMBER: 'the server does not speak TLS on this port; is it http://?',
  ERR_SSL_PACKET_LENGTH_TOO_LONG: 'the server does not speak TLS on this port; is it http://?',
  DEPTH_ZERO_SELF_SIGNED_CERT: 'the certificate is self-signed',
  SELF_SIGNED_CERT_IN_CHAIN: 'a certificate in the chain is self-signed',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: "the certificate's issuer is not trusted",
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: "the certificate's issuer is not trusted",
  CERT_HAS_EXPIRED: 'the certificate has expired',
  ERR_TLS_CERT_ALTNAME_INVALID: 'the certificate is for another host name',
  // The server's ALPN list holds none of the client's, and undici offers
  // `http/1.1` alone: an HTTPS listener for HTTP/2 only (`allowHTTP1: false`).
  ERR_SSL_TLSV1_ALERT_NO_APPLICATION_PROTOCOL:
    'the server offers no HTTP/1.1 (ALPN), which undici, the HTTP client of fetch, speaks: HTTP/2 only?',
}

// A certificate this machine does not trust (a private CA, as internal
// services use, or a self-signed one): trusted for the probe by the CA file
// Node reads at start, which is the only way to reach the endpoint at all.
const UNTRUSTED = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
])

function isTlsCode(code: string): boolean {
  return code in TLS_MEANING || code.startsWith('ERR_SSL_') || code.startsWith('ERR_TLS_')
}

/** Where a call the bound cut was, by the phase probe() names on its error. */
const CUT_PHASE: Record<string, string> = {
  dns: 'the DNS lookup had not answered',
  connect: 'it was still connecting (TCP or TLS)',
  headers: 'connected, it had sent no response headers',
  body: 'it was still sending the body',
}

/** The bound every probe call ran under: `callTimeoutMs`, from the `--budget`. */
export interface CallBound {
  budgetMs: number
  callTimeoutMs: number
  /** Which call was running: how many had ended, and the probe's plan. */
  call?: { done: number; warmup: number; samples: number }
}

/**
 * `warm-up call 1 of 3`, `measured call 4 of 10`: the call a bound cut. "a
 * call" alone did not say whether it was the first, cold one — a cold start
 * the warm-up exists for — or one in the middle of the measured calls, after
 * the others had answered in time.
 */
function callName(call: CallBound['call']): string {
  if (call === undefined) return 'a call'
  const n = call.done + 1
  return n <= call.warmup
    ? `warm-up call ${n} of ${call.warmup}`
    : `measured call ${n - call.warmup} of ${call.samples}`
}

/**
 * Why a probe call failed, in one line naming the phase: a name that does
 * not resolve is a DNS failure, not a connect failure.
 */
export function describeFailure(error: unknown, url: URL, bound?: CallBound): string {
  const where = url.host
  // The only deadline in a probe is the bound on each call (probe() passes it as a signal).
  if (bound && isDeadlineExceeded(error)) {
    // The phase the bound cut (probe() sets it): a SYN a firewall drops, a
    // server that accepts and never answers and a body that stalls read alike.
    const phase = (error as { phase?: unknown }).phase
    const cut = typeof phase === 'string' ? CUT_PHASE[phase] : undefined
    return `${where} did not finish ${callName(bound.call)} within ${bound.callTimeoutMs} ms (${bound.callTimeoutMs / bound.budgetMs} × the ${bound.budgetMs} ms --budget)${cut ? `: ${cut}` : ''}; the probe stops waiting there`
  }
  const os = (error as { osCode?: unknown }).osCode
  const code =
    typeof os === 'string' ? ` (${os}${OS_MEANING[os] ? `: ${OS_MEANING[os]}` : ''})` : ''
  const limit = (error as { limitMs?: unknown }).limitMs
  const within = typeof limit === 'number' ? ` within ${limit} ms` : ' in time'
  if (isDnsTimeout(error)) return `DNS lookup of ${url.hostname} did not answer${within}`
  // Any other failure in the dns phase (a ConnectError with phase 'dns', or
  // a DnsError where @hourglass/fetch has one) is the name not resolving.
  if ((error as { phase?: unknown }).phase === 'dns') {
    return `DNS lookup of ${url.hostname} failed${code}`
  }
  if (isConnectError(error)) {
    if (typeof os === 'string' && isTlsCode(os)) {
      const trust = UNTRUSTED.has(os)
        ? '; to trust it, give its CA certificate (PEM) as NODE_EXTRA_CA_CERTS=<file>'
        : ''
      return `TLS handshake with ${where} failed (${os}${TLS_MEANING[os] ? `: ${TLS_MEANING[os]}` : ''})${trust}`
    }
    return `cannot connect to ${where}${code}`
  }
  if (isConnectTimeout(error)) return `connecting to ${where} did not finish${within}`
  if (isHeadersTimeout(error)) return `${where} sent no response headers${within}`
  if (isBodyTimeout(error)) return `${where} stopped sending the body${within}`
  const message = messageOf(error)
  const socketCode = codeOf(error)
  // undici's "bad response" is an interim `100 Continue` the request did not
  // ask for: the probe sends no `Expect: 100-continue`, nor lets -H send one.
  // RFC 9110 (15.2) has a client read past an unexpected 1xx; undici, and so
  // fetch, drops the connection on a 100. Its other "bad response", an
  // answer to no request, fails no call.
  if (socketCode === 'UND_ERR_SOCKET' && message === 'bad response') {
    return `${where} sent 100 Continue unasked (no Expect: 100-continue was sent), and undici, the HTTP client of fetch, drops the connection on it: any fetch caller fails the same way (UND_ERR_SOCKET: bad response)`
  }
  // A 101 Switching Protocols to a GET that asked for no upgrade: llhttp
  // reads it as one, and undici drops the connection (SocketError "bad
  // upgrade"), or, when no Upgrade header came with it, fails its own
  // `assert(upgrade)`. Nothing closed: the endpoint switched protocols.
  const check = socketCode === 'ERR_ASSERTION' ? failedCheck(message) : undefined
  if ((socketCode === 'UND_ERR_SOCKET' && message === 'bad upgrade') || check === 'upgrade') {
    return `${where} answered 101 Switching Protocols unasked (the probe asks for no upgrade), and undici, the HTTP client of fetch, drops the connection on it: any fetch caller fails the same way (${socketCode}: ${check ?? message})`
  }
  // A status line under 100 (`HTTP/1.1 000`): llhttp takes any three
  // digits, undici's client then fails `assert(statusCode >= 100)`, whose
  // message's first line, "The expression evaluated to a falsy value:", was
  // all the probe printed.
  if (check === 'statusCode >= 100') {
    return `${where} answered a status under 100, which is no HTTP status (100 to 599), and undici, the HTTP client of fetch, fails on it: any fetch caller fails the same way (${socketCode}: ${check})`
  }
  // Any other check inside undici the answer made fail: the check, not the
  // assertion's empty first line.
  if (socketCode === 'ERR_ASSERTION') {
    return `${where} sent an answer undici, the HTTP client of fetch, fails on: any fetch caller fails the same way (${socketCode}: ${check ?? message.split('\n')[0]})`
  }
  // Connected, then the socket went away: undici's "other side closed", or the OS's reset.
  if (socketCode === 'UND_ERR_SOCKET' || socketCode === 'ECONNRESET' || socketCode === 'EPIPE') {
    return `${where} closed the connection before the answer was complete (${message})`
  }
  // fetch decodes the body as its Content-Encoding says; zlib refusing it
  // surfaces as fetch's bare "terminated", its cause the only clue. zlib's
  // codes are Z_* for gzip and deflate; a brotli stream (`br`, which fetch
  // asks for over https:) fails with ERR__ERROR_* (BROTLI_DECODER_ERROR_*
  // less its prefix), whose message, "Decompression failed", was all the
  // probe printed. Only those that say the body is malformed: brotli's
  // ALLOC_* and UNREACHABLE are the probe's own failures, not the host's.
  if (
    typeof socketCode === 'string' &&
    /^(?:Z_|ERR__ERROR_(?:FORMAT_|DICTIONARY_NOT_SET$))/.test(socketCode)
  ) {
    const cause = (error as { cause?: unknown }).cause
    const why = cause instanceof Error ? cause.message : message
    return `${where} sent a body that does not decode as its Content-Encoding says (${socketCode}: ${why})`
  }
  // Response headers over undici's limit, which is Node's own
  // (`--max-http-header-size`, 16 KiB by default): the endpoint's answer,
  // and a limit the operator can raise to measure it.
  if (socketCode === 'UND_ERR_HEADERS_OVERFLOW') {
    return `${where} sent response headers larger than the ${maxHeaderSize} bytes Node's HTTP client accepts (${socketCode}); to measure it, raise the limit: NODE_OPTIONS=--max-http-header-size=<bytes>`
  }
  if (socketCode === 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH') {
    return `${where} sent a body whose length does not match its Content-Length header (${socketCode})`
  }
  // The connection closed in the middle of a chunked body, its answer sent
  // with `Connection: close`: undici asks its parser to finish the message
  // there, which refuses an "invalid EOF state". The endpoint did answer in
  // HTTP/1.1 (status and headers read) and then cut its body short, as on a
  // keep-alive connection, where the same cut reads "other side closed"
  // above (curl: "(18) transfer closed with outstanding read data"). Told
  // by llhttp's reason: undici leaves this error's `code` unset.
  if (nameOf(error) === 'HTTPParserError' && message.endsWith('(Invalid EOF state)')) {
    return `${where} closed the connection before the answer was complete (the body ended before its last chunk)`
  }
  // An HTTP/2 server without HTTP/1.1 (h2c) answers a request line with its
  // connection preface, a SETTINGS frame, where llhttp expects `HTTP/`.
  if (nameOf(error) === 'HTTPParserError' && isHttp2Settings(dataOf(error))) {
    // Over TLS the server chose no ALPN protocol and spoke HTTP/2 anyway
    // (grpc-go before 1.67 did): said so, not "on an http: URL".
    const how =
      url.protocol === 'https:'
        ? 'speaks HTTP/1.1 only (the server negotiated no ALPN protocol)'
        : 'speaks HTTP/1.1 on an http: URL'
    return `${where} did not answer in HTTP/1.1: it speaks HTTP/2 only (its first bytes are an HTTP/2 SETTINGS frame), and undici, the HTTP client of fetch, ${how}`
  }
  // undici's HTTP/1.1 parser refused the answer: not an HTTP server (its
  // `code`, HPE_*, is not always set; its name is).
  if (nameOf(error) === 'HTTPParserError') {
    return `${where} did not answer in HTTP/1.1 (${message})`
  }
  if (message === 'bad port') {
    return `fetch refuses to call port ${url.port} (a "bad port" in the Fetch standard); probe another port`
  }
  return message.split('\n')[0]!
}

/**
 * undici wraps network errors as `TypeError('fetch failed', { cause })`, and
 * a failure while the body streams as `TypeError('terminated', { cause })`:
 * the cause says more ("other side closed", the parser's reason).
 */
function isFetchWrapper(error: Error): boolean {
  return (
    (error.message === 'fetch failed' || error.message === 'terminated') &&
    error.cause instanceof Error
  )
}

function messageOf(error: unknown): string {
  if (!(error instanceof Error)) return String(error)
  if (isFetchWrapper(error)) return (error.cause as Error).message
  return error.message
}

/** undici's own error code, on the error or on the cause fetch wraps it in. */
function codeOf(error: unknown): unknown {
  const own = (error as { code?: unknown } | null)?.code
  if (own !== undefined) return own
  return ((error as { cause?: unknown } | null)?.cause as { code?: unknown } | undefined)?.code
}

/**
 * The expression a `node:assert` assertion generated its message from
 * (`The expression evaluated to a falsy value:\n\n  assert(upgrade)\n`),
 * printable on one line; undefined when the message is not that form.
 */
function failedCheck(message: string): string | undefined {
  const expression = /^\s*assert\((.{1,120})\)\s*$/m.exec(message)?.[1]
  return expression === undefined ? undefined : printable(expression, 120)
}

/** The bytes undici's parser stopped at (`HTTPParserError.data`), on the error or its cause. */
function dataOf(error: unknown): unknown {
  if (!(error instanceof Error)) return undefined
  const parserError = isFetchWrapper(error) ? (error.cause as Error) : error
  return (parserError as { data?: unknown }).data
}

/**
 * A frame header (RFC 9113 §4.1: 3 bytes of length, type, flags, 4 of
 * stream) of type SETTINGS (4) on stream 0, not an ACK: the first frame of
 * every HTTP/2 server's preface (§3.4).
 */
function isHttp2Settings(data: unknown): boolean {
  if (typeof data !== 'string' || data.length < 9) return false
  return (
    data.charCodeAt(3) === 0x04 &&
    data.charCodeAt(4) === 0x00 &&
    data.slice(5, 9) === '\u0000\u0000\u0000\u0000'
  )
}

/** The error's name, or that of the cause fetch wraps it in. */
function nameOf(error: unknown): unknown {
  if (!(error instanceof Error)) return undefined
  if (isFetchWrapper(error)) return (error.cause as Error).name
  return error.name
}
