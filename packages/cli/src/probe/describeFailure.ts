import {
  isBodyTimeout,
  isConnectError,
  isConnectTimeout,
  isDnsTimeout,
  isHeadersTimeout,
} from '@hourglass/fetch'

const OS_MEANING: Record<string, string> = {
  ENOTFOUND: 'no such name',
  EAI_AGAIN: 'the resolver did not answer; try again',
  ECONNREFUSED: 'nothing listens there',
  ECONNRESET: 'the connection was reset',
  EHOSTUNREACH: 'no route to the host',
  ENETUNREACH: 'no route to the network',
}

/**
 * Why a probe call failed, in one line naming the phase: a name that does
 * not resolve is a DNS failure, not a connect failure.
 */
export function describeFailure(error: unknown, url: URL): string {
  const where = url.host
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
  if (isConnectError(error)) return `cannot connect to ${where}${code}`
  if (isConnectTimeout(error)) return `connecting to ${where} did not finish${within}`
  if (isHeadersTimeout(error)) return `${where} sent no response headers${within}`
  if (isBodyTimeout(error)) return `${where} stopped sending the body${within}`
  const message = messageOf(error)
  // Connected, then the socket went away: undici's "other side closed", or the OS's reset.
  const socketCode = codeOf(error)
  if (socketCode === 'UND_ERR_SOCKET' || socketCode === 'ECONNRESET' || socketCode === 'EPIPE') {
    return `${where} closed the connection before the answer was complete (${message})`
  }
  if (message === 'bad port') {
    return `fetch refuses to call port ${url.port} (a "bad port" in the Fetch standard); probe another port`
  }
  return message.split('\n')[0]!
}

/** undici wraps network errors as `TypeError('fetch failed', { cause })`: the cause says more. */
function messageOf(error: unknown): string {
  if (!(error instanceof Error)) return String(error)
  if (error.message === 'fetch failed' && error.cause instanceof Error) return error.cause.message
  return error.message
}

/** undici's own error code, on the error or on the cause fetch wraps it in. */
function codeOf(error: unknown): unknown {
  const own = (error as { code?: unknown } | null)?.code
  if (own !== undefined) return own
  return ((error as { cause?: unknown } | null)?.cause as { code?: unknown } | undefined)?.code
}
