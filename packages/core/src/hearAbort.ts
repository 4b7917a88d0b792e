import { isolated } from './isolated.js'

/**
 * Everyone listening to each signal through `hearAbort` — a deadline's
 * `signal` option, every `wait` (and through it `untilEnded` and
 * `outcomeWithin`), an LLM call's attempts under its caller's `signal` —
 * heard through one `abort` listener per signal, added with the first of
 * them and removed with the last. A listener each made a batch that shares
 * one signal — `Promise.all(prompts.map((p) => call(p, { signal })))`, a
 * server giving one shutdown signal to every request's deadline, a queue
 * worker's jobs waiting under its shutdown signal — warn "Possible
 * EventTarget memory leak detected. 11 abort listeners"
 * (MaxListenersExceededWarning) at 11 in flight; raising that signal's limit
 * is its owner's call, not ours. One map for all of them: a map per kind put
 * a listener per kind on a signal used by both. Weak: a signal nobody holds
 * any more goes with its entry.
 */
const hearersOf = new WeakMap<AbortSignal, Hearers>()

interface Hearers {
  // One entry per subscription (the same function twice is two callers).
  readonly callbacks: Set<{ readonly callback: () => void }>
  readonly listener: () => void
}

/**
 * @internal Call `callback` when `signal` (not yet aborted) aborts; returns
 * the unsubscribe. Every caller on one signal shares one `abort` listener on
 * it (see `hearersOf`), so use this, not `addEventListener`, for a signal a
 * caller may share among many operations. Callers are called in the order
 * they subscribed, each on its own: one that throws is reported as uncaught
 * on the next tick, as an `EventTarget` reports a throwing listener, and
 * stops none of the others. Exported for Hourglass's own packages; not part
 * of the public API.
 */
export function hearAbort(signal: AbortSignal, callback: () => void): () => void {
  let hearers = hearersOf.get(signal)
  if (hearers === undefined) {
    const callbacks: Hearers['callbacks'] = new Set()
    const listener = () => {
      hearersOf.delete(signal)
      // The live set: a caller unsubscribed by an earlier one's callback is
      // skipped, as a listener removed during the dispatch is.
      for (const entry of callbacks) {
        callbacks.delete(entry)
        isolated(entry.callback)
      }
    }
    hearers = { callbacks, listener }
    hearersOf.set(signal, hearers)
    signal.addEventListener('abort', listener, { once: true })
  }
  const own = hearers
  const entry = { callback }
  own.callbacks.add(entry)
  return () => {
    own.callbacks.delete(entry)
    // Still registered (not the abort being dispatched, whose listener is gone already).
    if (own.callbacks.size === 0 && hearersOf.get(signal) === own) {
      hearersOf.delete(signal)
      signal.removeEventListener('abort', own.listener)
    }
  }
}
