import { HourglassError, hasErrorCode } from '@hourglass/core'

export const RESPONSE_TOO_LARGE = 'RESPONSE_TOO_LARGE'

export interface ResponseTooLargeDetails {
  provider: string
  model: string
  /** The 2xx status the answer came with. */
  status: number
  /** The limit passed: the adapter's `maxResponseBytes` (a whole answer) or `maxStreamBytes` (a stream). */
  limitBytes: number
  /** Which option `limitBytes` is; default `maxResponseBytes`. */
  option?: 'maxResponseBytes' | 'maxStreamBytes' | undefined
  /** Body bytes read before reading stopped (0 when the announced length already said too much). */
  readBytes: number
  /** The body's `Content-Length`, when it announced one. */
  declaredBytes?: number | undefined
}

/**
 * A 2xx answer body longer than the adapter's `maxResponseBytes` (a stream:
 * longer in all than its `maxStreamBytes`): reading
 * stopped there and its connection was closed. The provider had generated
 * the whole answer before sending it, so it billed it: the adapter returns a
 * `ProviderError` that is not retryable (this model is never asked again for
 * it), with this error as its `cause`. A fallback model may still be asked.
 */
export class ResponseTooLargeError extends HourglassError {
  static override readonly errorName: string = 'ResponseTooLargeError'
  static readonly code = RESPONSE_TOO_LARGE
  readonly provider: string
  readonly model: string
  readonly status: number
  readonly limitBytes: number
  readonly option: 'maxResponseBytes' | 'maxStreamBytes'
  readonly readBytes: number
  readonly declaredBytes: number | undefined

  constructor(details: ResponseTooLargeDetails) {
    const size =
      details.declaredBytes === undefined
        ? `more than ${details.limitBytes} bytes (reading stopped after ${details.readBytes})`
        : `${details.declaredBytes} bytes (its Content-Length)`
    const option = details.option ?? 'maxResponseBytes'
    super(
      RESPONSE_TOO_LARGE,
      `the ${details.status} answer from ${details.provider}/${details.model} is ${size}, over ${option} (${details.limitBytes}); not read further`,
    )
    this.provider = details.provider
    this.model = details.model
    this.status = details.status
    this.limitBytes = details.limitBytes
    this.option = option
    this.readBytes = details.readBytes
    this.declaredBytes = details.declaredBytes
  }
}

export function isResponseTooLarge(error: unknown): error is ResponseTooLargeError {
  return hasErrorCode(error, RESPONSE_TOO_LARGE)
}
