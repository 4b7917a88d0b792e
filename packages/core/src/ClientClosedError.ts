import { HourglassError, hasErrorCode } from './HourglassError.js'

/**
 * The caller went away (closed its connection) before the response was
 * complete. Work done on its behalf should stop; nobody is left to answer.
 */
export class ClientClosedError extends HourglassError {
  static override readonly errorName: string = 'ClientClosedError'
  static readonly code = 'CLIENT_CLOSED'

  constructor(message = 'the client closed the connection before the response was complete') {
    super(ClientClosedError.code, message)
  }
}

export function isClientClosed(error: unknown): error is ClientClosedError {
  return hasErrorCode(error, ClientClosedError.code)
}
