import { HourglassError, hasErrorCode } from '@hourglass/core'

/**
 * Bad command-line arguments: the CLI prints `message` as one line on stderr
 * and exits 2.
 */
export class UsageError extends HourglassError {
  static override readonly errorName: string = 'UsageError'
  static readonly code = 'CLI_USAGE'
  constructor(message: string, options?: ErrorOptions) {
    super(UsageError.code, message, options)
  }
}

export function isUsageError(error: unknown): error is UsageError {
  return hasErrorCode(error, 'CLI_USAGE')
}
