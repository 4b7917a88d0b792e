import { HourglassError } from './HourglassError.js'

/**
 * A slice used out of order: started a second time (`slice` or `run` after
 * it started once), or ended (`end`) before it started. `code` says which.
 * A slice starts once: a second start would allot it again from what is
 * left and report only the last run.
 */
export class SliceAlreadyStartedError extends HourglassError {
  static override readonly errorName: string = 'SliceAlreadyStartedError'
  static readonly code = 'SLICE_ALREADY_STARTED'
  readonly slice: string

  constructor(slice: string) {
    super(SliceAlreadyStartedError.code, `slice "${slice}" has already started`)
    this.slice = slice
  }
}

/**
 * `end(name)` for a slice `run` started while its step is pending: `run`
 * ends its slices itself. Taken, `end` disposed the slice, and `run` then
 * never rejected — not at the slice's time, not at the plan's deadline —
 * and the slice read `ok`. After the step has settled, `end` does nothing.
 */
export class SliceEndedByRunError extends HourglassError {
  static override readonly errorName: string = 'SliceEndedByRunError'
  static readonly code = 'SLICE_ENDED_BY_RUN'
  readonly slice: string

  constructor(slice: string) {
    super(
      SliceEndedByRunError.code,
      `slice "${slice}" was started by run(), which ends it when its step settles`,
    )
    this.slice = slice
  }
}

/** `end(name)` for a slice that was never started. */
export class SliceNotStartedError extends HourglassError {
  static override readonly errorName: string = 'SliceNotStartedError'
  static readonly code = 'SLICE_NOT_STARTED'
  readonly slice: string

  constructor(slice: string) {
    super(SliceNotStartedError.code, `slice "${slice}" has not started`)
    this.slice = slice
  }
}
