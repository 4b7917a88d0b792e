import { HourglassError, hasErrorCode } from '@hourglass/core'

export const SSE_BUFFER_OVERFLOW = 'SSE_BUFFER_OVERFLOW'

/**
 * An SSE stream buffered more than its cap without completing an event. A
 * model stream's events are small; one that grows without a blank line is
 * broken or hostile, and buffering it forever would let one upstream eat the
 * process's memory.
 */
export class SseBufferOverflowError extends HourglassError {
  static override readonly errorName: string = 'SseBufferOverflowError'
  static readonly code = SSE_BUFFER_OVERFLOW
  /** The cap that was exceeded, in the unit named by the option that set it. */
  readonly limit: number

  constructor(limit: number, unit: 'bytes' | 'chars', options?: ErrorOptions) {
    super(
      SSE_BUFFER_OVERFLOW,
      `SSE stream buffered more than ${limit} ${unit} without completing an event`,
      options,
    )
    this.limit = limit
  }
}

export function isSseBufferOverflow(error: unknown): error is SseBufferOverflowError {
  return hasErrorCode(error, SSE_BUFFER_OVERFLOW)
}
