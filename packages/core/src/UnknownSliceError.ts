import { describeValue } from './describeValue.js'
import { HourglassError } from './HourglassError.js'

/**
 * `slice`, `run`, `end` or `allotment` named a slice the plan does not have
 * (a typo). A plain `Error` gave callers nothing to branch on but its
 * message, and a `run` that rejects with it is easily taken for the step's
 * own failure.
 */
export class UnknownSliceError extends HourglassError {
  static override readonly errorName: string = 'UnknownSliceError'
  static readonly code = 'UNKNOWN_SLICE'
  /** The name asked for (shown as `describeValue` does when not a string). */
  readonly slice: string
  /** The slices the plan has, in plan order. */
  readonly known: readonly string[]

  constructor(slice: unknown, known: readonly string[]) {
    const shown = typeof slice === 'string' ? `"${slice}"` : describeValue(slice)
    super(
      UnknownSliceError.code,
      `no slice named ${shown} in this plan (${known.length === 0 ? 'it has none' : known.join(', ')})`,
    )
    this.slice = typeof slice === 'string' ? slice : describeValue(slice)
    this.known = known
  }
}
