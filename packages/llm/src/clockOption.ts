import { type Clock, isClock, optionError, systemClock } from '@hourglass/core'

/**
 * @internal A constructor's `clock` option: the Clock given, the system
 * clock when none (`undefined`, `null`), and anything else refused naming
 * `${owner}: clock`. Unchecked, a class (`ManualClock` without `new`) was
 * taken, and the first call threw "this[#clock].now is not a function",
 * naming no option — or, through `sideEffect`, nothing at all.
 */
export function clockOption(owner: string, clock: unknown): Clock {
  const chosen = clock ?? systemClock
  if (!isClock(chosen)) {
    throw optionError(`${owner}: clock`, 'a Clock (now, setTimeout, clearTimeout)', chosen)
  }
  return chosen
}
