import { HourglassError, hasErrorCode } from '@hourglass/core'
import { describeError } from './describeError.js'

/**
 * `sideEffect` could not read its store (Redis down, a query that failed),
 * so it could not tell whether the operation already ran: it ran nothing.
 * Not the tool's failure — `runTurns` fails the run with it instead of
 * handing the store's error (its host names, its wording) to the model as
 * the tool's result. Run the operation again once the store is back: what
 * already ran is found there.
 */
export class SideEffectStoreError extends HourglassError {
  static override readonly errorName: string = 'SideEffectStoreError'
  static readonly code = 'SIDE_EFFECT_STORE_FAILED'
  /** The operation key whose record could not be read. */
  readonly key: string

  constructor(key: string, cause: unknown) {
    super(
      SideEffectStoreError.code,
      `the side-effect store could not be read (${describeError(cause).slice(0, 300)}); nothing was run, as whether it already ran is unknown`,
      { cause },
    )
    this.key = key
  }
}

export function isSideEffectStoreError(error: unknown): error is SideEffectStoreError {
  return hasErrorCode(error, SideEffectStoreError.code)
}
