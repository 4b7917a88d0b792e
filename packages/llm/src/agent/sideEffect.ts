import { currentDeadline, type Deadline, untilEnded } from '@hourglass/core'
import { notNaN } from '../retry/checkNumber.js'
import { MemorySideEffectStore } from './MemorySideEffectStore.js'
import type { SideEffectStore } from './SideEffectStore.js'

export interface SideEffectOptions {
  /**
   * Where completed runs are remembered. Default: one `MemorySideEffectStore`
   * shared by the process, holding the last 10 000 completed runs (a key
   * dropped from it runs `fn` again); pass your own for another bound.
   */
  store?: SideEffectStore | undefined
  /** How long a completed run is remembered, in ms. Default 86 400 000 (24 h); `Infinity` = as long as the store keeps it; 0 = not remembered once done (only concurrent callers share the run). */
  ttlMs?: number | undefined
  /**
   * Bounds how long this caller waits for the run (its own, or the one in
   * progress it joins): when it ends first, the promise rejects with its
   * reason while the run goes on, and is remembered when it completes.
   * Default: `currentDeadline()`.
   */
  deadline?: Deadline | undefined
  /** Ends this caller's wait as `deadline` does, with the signal's reason. */
  signal?: AbortSignal | undefined
}

/** 24 h, as payment APIs keep idempotency keys. */
export const DEFAULT_SIDE_EFFECT_TTL_MS = 86_400_000

// Bounded (`DEFAULT_MAX_SIDE_EFFECT_ENTRIES`): it lives as long as the
// process, and unbounded it held every result of the last `ttlMs` (24 h).
// Runs in progress are in `inFlight`, never in a store, so the bound can
// never let a second run of a key start while its first is running.
const defaultStore = new MemorySideEffectStore()
const inFlight = new WeakMap<SideEffectStore, Map<string, Promise<unknown>>>()
// Runs that completed but that their store failed to record (Redis down at
// that moment): remembered by this process instead, per store.
const unrecorded = new WeakMap<SideEffectStore, MemorySideEffectStore>()

/**
 * Runs `fn` at most once per operation `key` (derive it with
 * `idempotencyKey`, from the operation — never from the attempt number):
 *
 * - a later call with the same key gets the remembered result without
 *   running `fn` again — a retried agent turn does not send the email twice;
 * - concurrent calls with the same key share the one run in progress, each
 *   waiting for it no longer than its own `deadline` or `signal` allows: one
 *   that ends first rejects with its reason, and the run is not started
 *   again while it may still complete (a caller that arrives while a run
 *   that will never settle is in progress can only fail by its deadline —
 *   a second run could do the work twice);
 * - a run whose store fails to record it still returns its result (the side
 *   effect happened); this process then remembers it instead, for `ttlMs`;
 * - a run that throws is **not** remembered: the error goes to every caller
 *   sharing that run and the next call runs `fn` again. That assumes a
 *   throwing tool did not act. A tool that can fail after acting (the mail
 *   API timed out after sending) must pass the key on downstream as an
 *   `Idempotency-Key` — `fn` receives it for that reason.
 */
export function sideEffect<T>(
  key: string,
  fn: (key: string) => T | Promise<T>,
  options: SideEffectOptions = {},
): Promise<T> {
  if (typeof key !== 'string' || key === '') {
    throw new TypeError('sideEffect: key must be a non-empty string (see idempotencyKey)')
  }
  // A NaN ttl would silently remember nothing, and the next call with this
  // key would run `fn` again: refused, not given a meaning.
  notNaN('sideEffect', 'ttlMs', options.ttlMs)
  const store = options.store ?? defaultStore
  const ttlMs = options.ttlMs ?? DEFAULT_SIDE_EFFECT_TTL_MS
  let running = inFlight.get(store)
  if (running === undefined) {
    running = new Map()
    inFlight.set(store, running)
  }
  const until = { deadline: options.deadline ?? currentDeadline(), signal: options.signal }
  // A caller already out of time starts nothing: the side effect would
  // happen for a caller that cannot wait for it.
  if (until.signal?.aborted) return Promise.reject(until.signal.reason)
  try {
    until.deadline?.throwIfExpired()
  } catch (reason) {
    return Promise.reject(reason)
  }
  const shared = running.get(key)
  if (shared !== undefined) return untilEnded(shared as Promise<T>, until)

  const run = (async () => {
    const kept = unrecorded.get(store)?.get(key)
    if (kept !== undefined) return kept.value as T
    const done = await store.get(key)
    if (done !== undefined) return done.value as T
    const value = await fn(key)
    const record = { value, completedAtMs: Date.now() }
    try {
      await store.set(key, record, ttlMs)
    } catch {
      // The side effect happened: its caller gets its result. Failing the
      // run instead would hand the agent an error, and its model would call
      // the tool again — the email sent twice. The store does not know of
      // the run, so this process remembers it for the same ttl.
      let local = unrecorded.get(store)
      if (local === undefined) {
        local = new MemorySideEffectStore()
        unrecorded.set(store, local)
      }
      local.set(key, record, ttlMs)
    }
    return value
  })()
  // Registered before the first await above resolves, so a caller arriving in
  // the same tick already finds the run.
  running.set(key, run)
  const forget = () => {
    running.delete(key)
  }
  run.then(forget, forget)
  // The run goes on when this caller stops waiting (its deadline, its
  // signal): it is remembered when it completes, and callers joining it
  // meanwhile wait for it as above.
  return untilEnded(run, until)
}
