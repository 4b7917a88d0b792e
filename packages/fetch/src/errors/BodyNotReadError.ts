import { EgressError, type EgressErrorDetails } from './EgressError.js'

/**
 * undici's fetch cancels the body of a Response that is garbage-collected
 * before anything read it, with this reason (a string, not an error): its
 * safety net for a body that was neither read nor cancelled.
 */
export const UNDICI_COLLECTED_REASON = 'Response object has been garbage collected'

/**
 * The caller dropped the Response with its body unread: undici cancelled the
 * body when the Response was collected, and the connection was closed (an
 * unread body cannot be reused). Nobody is left to throw it to: it is the
 * attempt's end (`attemptEnd`'s `errorCode`), so an egress span or a metric
 * ends with the reason instead of never ending.
 */
export class BodyNotReadError extends EgressError {
  static override readonly errorName: string = 'BodyNotReadError'
  static readonly code = 'BODY_NOT_READ'

  constructor(details: EgressErrorDetails) {
    super(BodyNotReadError.code, 'body', 'response body dropped unread', details)
  }
}
