import { type Clock, systemClock } from '@hourglass/core'
import { ADMISSION_METHODS, assertMethods } from '../assertMethods.js'
import { Admission } from './Admission.js'

let chosen: Admission | undefined
let shared: Admission | undefined
// A deadline on another clock (a test's ManualClock) gets an admission on
// that clock: cooldowns and waits must be measured on the deadline's clock.
let byClock = new WeakMap<Clock, Admission>()

/**
 * The `Admission` every `callModel` without an `admission` option shares:
 * one per process, created on first use (memory store, default options).
 * Inspect it (`forecast`, `neededMs`) or feed it (`report`) like any other.
 */
export function defaultAdmission(): Admission {
  if (chosen !== undefined) return chosen
  shared ??= new Admission()
  return shared
}

/**
 * Replaces the process-wide default: for instance one on a
 * `RedisCooldownStore`, so every call of the fleet shares its cooldowns
 * without passing it to each call. `undefined` drops the current one (the
 * next call creates a fresh in-memory one), and so does `null`. Anything
 * else that is no `Admission` is refused (`TypeError`).
 */
export function setDefaultAdmission(admission: Admission | undefined): void {
  // Checked here, where the mistake is made: taken, `null` failed every
  // call after it as "Cannot read properties of null (reading 'acquire')",
  // and a store given in its place (`setDefaultAdmission(new
  // RedisCooldownStore(redis))`) as "forecast is not a function" — each
  // call of the process, naming neither this setter nor what it takes.
  assertMethods(
    'setDefaultAdmission',
    'admission',
    admission,
    ADMISSION_METHODS,
    'an Admission (new Admission({ store })) or undefined',
  )
  chosen = admission ?? undefined
  shared = undefined
  byClock = new WeakMap()
}

/** The default for a call whose deadline runs on `clock`. @internal */
export function defaultAdmissionFor(clock: Clock): Admission {
  if (chosen !== undefined || clock === systemClock) return defaultAdmission()
  let admission = byClock.get(clock)
  if (admission === undefined) {
    admission = new Admission({ clock })
    byClock.set(clock, admission)
  }
  return admission
}
