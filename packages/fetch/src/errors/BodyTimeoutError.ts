import { hasErrorCode } from '@hourglass/core'
import { EgressError, type EgressErrorDetails } from './EgressError.js'

/** The body went quiet for longer than the idle limit between chunks (a read timeout after the first byte). */
export class BodyTimeoutError extends EgressError {
  static override readonly errorName: string = 'BodyTimeoutError'
  static readonly code = 'BODY_TIMEOUT'

  constructor(details: EgressErrorDetails) {
    super(BodyTimeoutError.code, 'body', 'body idle timeout', details)
  }
}

export function isBodyTimeout(error: unknown): error is BodyTimeoutError {
  return hasErrorCode(error, BodyTimeoutError.code)
}
