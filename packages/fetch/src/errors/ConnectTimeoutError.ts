import { hasErrorCode } from '@hourglass/core'
import { type ConnectTarget, describeTarget } from './connectTarget.js'
import { EgressError, type EgressErrorDetails } from './EgressError.js'

const WHAT = 'connect timed out'

/** TCP connect (and TLS handshake for https) did not finish within its limit. */
export class ConnectTimeoutError extends EgressError {
  static override readonly errorName: string = 'ConnectTimeoutError'
  static readonly code = 'CONNECT_TIMEOUT'
  /**
   * The name (or IP address) in the URL that was being connected to, as
   * `DnsTimeoutError` names it. Undefined only for one raised where no
   * connector of ours connected (undici's own, whose error is the `cause`).
   */
  readonly hostname: string | undefined
  /** The port connected to (the URL's, else 80 or 443); undefined with `hostname`, or over a socket path. */
  readonly port: number | undefined

  constructor(
    details: EgressErrorDetails & { hostname?: string | undefined; port?: number | undefined },
  ) {
    super(ConnectTimeoutError.code, 'connect', messageFor(describeTarget(details)), details)
    this.hostname = details.hostname
    this.port = details.port
  }
}

export function isConnectTimeout(error: unknown): error is ConnectTimeoutError {
  return hasErrorCode(error, ConnectTimeoutError.code)
}

/**
 * @internal Name where the connect went on a connect timeout raised by the
 * attempt's phase timer, which times a phase and knows no host: the
 * connector does, and names it as the attempt ends — before anyone hears
 * the error (the attempt's finish hooks run ahead of its abort handlers),
 * as `nameDnsTimeoutHost` names a lookup's. Its stack is not read here: V8
 * writes the message into it when it is first read, so it says the same.
 */
export function nameConnectTimeoutHost(error: ConnectTimeoutError, target: ConnectTarget): void {
  if (error.hostname !== undefined) return
  ;(error as { hostname: string | undefined }).hostname = target.hostname
  const port = target.socketPath === undefined ? target.port : undefined
  ;(error as { port: number | undefined }).port = port
  if (error.message.startsWith(WHAT)) {
    const named = messageFor(describeTarget({ ...target, port }))
    error.message = `${named}${error.message.slice(WHAT.length)}`
  }
}

function messageFor(where: string | undefined): string {
  return where === undefined ? WHAT : `${WHAT} for ${where}`
}
