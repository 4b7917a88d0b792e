import { currentDeadline, type Deadline } from '@hourglass/core'

/**
 * The deadline a call runs under: the one given, else the ambient one
 * (`currentDeadline()`). `false` is none — not even the ambient one — as in
 * core's `guard`, `wait` and `untilEnded` (`{ deadline: useIt && req.deadline }`);
 * it failed here as "deadline must be a Deadline" or "throwIfExpired is not
 * a function".
 */
export function callDeadline(given: Deadline | false | null | undefined): Deadline | undefined {
  if (given === false) return undefined
  return given ?? currentDeadline()
}
