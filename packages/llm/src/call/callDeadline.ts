import { currentDeadline, type Deadline, runWithDeadline } from '@hourglass/core'

/**
 * The deadline a call runs under: the one given, else the ambient one
 * (`currentDeadline()`). `false` is none — not even the ambient one — as
 * core's `guard`, `wait` and `untilEnded` read it for their own bound
 * (`{ deadline: useIt && req.deadline }`); here also for what the call
 * starts (see `shadowAmbientIfFalse`). It failed here as "deadline must be a
 * Deadline" or "throwIfExpired is not a function".
 */
export function callDeadline(given: Deadline | false | null | undefined): Deadline | undefined {
  if (given === false) return undefined
  return given ?? currentDeadline()
}

/**
 * `fn`, run with no ambient deadline when `given` is `false`, else as it is.
 * `false` is none for everything the work starts too — admission, a fetch
 * and its interceptor, a tool's own calls — which read `currentDeadline()`
 * when given none: given only to the outer call, a spent ambient deadline
 * still refused the tools of a `runTurns({ deadline: false })`.
 */
export function shadowAmbientIfFalse<T>(
  given: Deadline | false | null | undefined,
  fn: () => T,
): T {
  // Shadowed with undefined: `runWithDeadline` takes one (see core's context).
  return given === false ? runWithDeadline(undefined as unknown as Deadline, fn) : fn()
}
