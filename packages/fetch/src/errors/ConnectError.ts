import { hasErrorCode } from '@hourglass/core'
import { describeTarget } from './connectTarget.js'
import { EgressError, type EgressErrorDetails } from './EgressError.js'

/** Below this, a connect failure is "fast": the peer answered (refused, reset), so one retry is cheap. */
export const FAST_CONNECT_FAILURE_MS = 50

/**
 * The connection could not be made (refused, reset during TLS,
 * unreachable). `fast` is true when it failed within 50 ms, the one connect
 * failure worth a retry (measured from the start of the connect that failed,
 * not of the attempt). A name that does not resolve is a `DnsError`.
 */
export class ConnectError extends EgressError {
  static override readonly errorName: string = 'ConnectError'
  static readonly code = 'CONNECT_FAILED'
  readonly fast: boolean
  /** The OS error code (`ECONNREFUSED`, `ENOTFOUND`, …) when there is one. */
  readonly osCode: string | undefined
  /**
   * The TLS peer answered with a certificate that failed verification
   * (`rejectUnauthorized`). However fast, never retried: the same
   * certificate is presented again.
   */
  readonly certificateRejected: boolean
  /**
   * The proxy answered the tunnel's `CONNECT` with this status (407, 403, …)
   * instead of 200 (undici's `ProxyAgent`). However fast, never retried: the
   * proxy answers the same again.
   */
  readonly proxyStatus: number | undefined
  /**
   * The name (or IP address) in the URL connected to, and its port, named in
   * the message too, as `ConnectTimeoutError` names them: a reset or a
   * refused handshake's cause names no host. Undefined where no connector of
   * ours connected (undici's own: its error is the `cause`).
   */
  readonly hostname: string | undefined
  readonly port: number | undefined

  /**
   * `refusal`: the dispatcher refused the connection itself (its message,
   * e.g. a proxy's answer to `CONNECT`): the cause's code is undici's, not
   * the OS's.
   */
  constructor(
    details: EgressErrorDetails & {
      hostname?: string | undefined
      port?: number | undefined
      socketPath?: string | undefined
      phaseMs: number
      certificateRejected?: boolean
      proxyStatus?: number | undefined
      refusal?: string | undefined
    },
  ) {
    const { proxyStatus, refusal } = details
    const code = (details.cause as { code?: unknown } | undefined)?.code
    const osCode = refusal === undefined && typeof code === 'string' ? code : undefined
    const where = describeTarget(details)
    super(
      ConnectError.code,
      'connect',
      `connect failed${where !== undefined ? ` for ${where}` : ''}${refusal !== undefined ? `: ${refusal}` : osCode !== undefined ? `: ${osCode}` : ''}`,
      details,
    )
    this.hostname = details.hostname
    this.port = details.socketPath === undefined ? details.port : undefined
    this.fast = details.phaseMs < FAST_CONNECT_FAILURE_MS
    this.osCode = osCode
    this.certificateRejected = details.certificateRejected ?? false
    this.proxyStatus = proxyStatus
  }
}

export function isConnectError(error: unknown): error is ConnectError {
  return hasErrorCode(error, ConnectError.code)
}
