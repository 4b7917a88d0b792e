import { HourglassError, hasErrorCode } from '@hourglass/core'

export const GATEWAY_SHUTDOWN = 'GATEWAY_SHUTDOWN'

/**
 * The reason a request's deadline is cancelled with when a shutdown's drain
 * timeout passes before it finished: answered 503 `shutting_down` (retry
 * elsewhere), not as the client's hang-up or a deadline. @internal
 */
export class GatewayShutdownError extends HourglassError {
  static override readonly errorName: string = 'GatewayShutdownError'
  static readonly code = GATEWAY_SHUTDOWN
  constructor() {
    super(GATEWAY_SHUTDOWN, 'the gateway is shutting down')
  }
}

export function isGatewayShutdown(error: unknown): error is GatewayShutdownError {
  return hasErrorCode(error, GATEWAY_SHUTDOWN)
}
