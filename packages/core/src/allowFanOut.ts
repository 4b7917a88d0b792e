import { defaultMaxListeners, getMaxListeners, setMaxListeners } from 'node:events'

/**
 * What undici's own fetch does for the signal it is given
 * (lib/web/fetch/request.js): a signal still at Node's default listener cap
 * gets 1500. Calls sharing one signal — a fan-out under a plan slice's, a
 * batch under one AbortController — each listen to it for as long as they
 * run and let go when they end, and the eleventh made Node print
 * "MaxListenersExceededWarning: Possible EventTarget memory leak detected":
 * noise, not a leak. A cap the owner set (anything but the default) is left
 * as it is, and so is Node 24's default for an AbortSignal, 0 (no cap, no
 * warning). Per call: one property read (no allocation) once the cap is
 * raised. A deadline's own signal gets it when first read
 * (`Deadline.signal`): a plan step's `Promise.all` of a dozen Node calls on
 * its slice's signal (`readFile`, `timers/promises`, each listening while
 * it runs) printed the warning at the tenth, `run` listening itself.
 * Fetch raises it for any signal a call is given.
 */
export function allowFanOut(signal: AbortSignal): void {
  try {
    if (getMaxListeners(signal) === defaultMaxListeners) setMaxListeners(1500, signal)
  } catch {
    // Not an EventTarget Node knows (getMaxListeners throws for one whose
    // cap was set to 0, i.e. no warning at all): nothing to raise.
  }
}
