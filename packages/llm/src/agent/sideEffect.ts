import {
  type ContextKey,
  contextKey,
  currentDeadline,
  type Deadline,
  isAbortError,
  isDeadline,
  isDeadlineExceeded,
  isExpiryOf,
  isInstance,
  readContext,
  runWithContext,
  untilEnded,
} from '@hourglass/core'
import { callDeadline, shadowAmbientIfFalse } from '../call/callDeadline.js'
import { checkBounds } from '../call/checkBounds.js'
import { CONTEXT_NAMES, refuseUnknownNames } from '../call/unknownOptionNames.js'
import { SideEffectStoreError } from '../errors/SideEffectStoreError.js'
import { nonNegative } from '../retry/checkNumber.js'
import { MemorySideEffectStore } from './MemorySideEffectStore.js'
import type { SideEffectRecord, SideEffectStore } from './SideEffectStore.js'

export interface SideEffectOptions {
  /**
   * Where completed runs are remembered. Default: one `MemorySideEffectStore`
   * shared by the process, holding the last 10 000 completed runs (a key
   * dropped from it runs `fn` again); pass your own for another bound.
   */
  store?: SideEffectStore | undefined
  /** How long a completed run is remembered, in ms: a number ≥ 0 (`RangeError` otherwise). Default 86 400 000 (24 h); `Infinity` = as long as the store keeps it; 0 = not remembered once done (only concurrent callers share the run). */
  ttlMs?: number | undefined
  /**
   * Bounds how long this caller waits for the run (its own, or the one in
   * progress it joins): when it ends first, the promise rejects with its
   * reason while the run goes on, and is remembered when it completes.
   * `fn` runs under the ambient deadline of the caller that starts it, so
   * what it starts (a fetch) stops when that caller's time does: a caller
   * that joined with time left then starts its own run.
   * Default: `currentDeadline()`; `false` = none, not even the ambient one
   * (as in core), for `fn` too.
   */
  deadline?: Deadline | false | undefined
  /** Ends this caller's wait as `deadline` does, with the signal's reason. */
  signal?: AbortSignal | undefined
}

const SIDE_EFFECT_OPTION_NAMES: ReadonlySet<string> = new Set(
  Object.keys({
    store: true,
    ttlMs: true,
    deadline: true,
    signal: true,
  } satisfies Record<keyof SideEffectOptions, true>),
)

/** 24 h, as payment APIs keep idempotency keys. */
export const DEFAULT_SIDE_EFFECT_TTL_MS = 86_400_000

// Bounded (`DEFAULT_MAX_SIDE_EFFECT_ENTRIES`): it lives as long as the
// process, and unbounded it held every result of the last `ttlMs` (24 h).
// Runs in progress are in `inFlight`, never in a store, so the bound can
// never let a second run of a key start while its first is running.
const defaultStore = new MemorySideEffectStore()
const inFlight = new WeakMap<SideEffectStore, Map<string, Run>>()
// Runs that completed but that their store failed to record (Redis down at
// that moment): remembered by this process instead, per store.
const unrecorded = new WeakMap<SideEffectStore, MemorySideEffectStore>()
// The runs whose `fn` the work in progress is part of, innermost first: a
// call with the key of one of them comes from inside that run (see `within`).
const RUNNING_IN: ContextKey<Within> = contextKey('@hourglass/llm.sideEffectRun')

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
 * - a call from inside the run of its own key (a `runTurns` tool wrapping
 *   its work in `sideEffect(context.key, fn, context)`) is part of that
 *   run: its `fn` runs, rather than waiting for the run it is part of;
 * - a caller out of time before `fn` starts — on arrival, or while the
 *   store is read — starts nothing; a caller that joined that run with time
 *   left starts its own;
 * - a run returns its result once `fn` completes, without waiting for the
 *   store's write; until that write settles, calls with the key share the
 *   result in this process. A write that fails leaves the result returned
 *   (the side effect happened); this process then remembers it instead,
 *   for `ttlMs`;
 * - a store that cannot be read (it throws or rejects) runs nothing: the
 *   promise rejects with a `SideEffectStoreError` (`SIDE_EFFECT_STORE_FAILED`,
 *   the store's error as its `cause`);
 * - `fn` runs under the ambient deadline of the caller that starts the run:
 *   what it starts stops when that caller's client leaves or its time ends.
 *   A run that fails so (with that caller's deadline's or signal's reason,
 *   or, once they have ended, with an abort error of the client's own
 *   making) sends each caller that joined it with time left to start its own;
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
  // `ttl: 0` left results remembered for 24 h, `signl` the caller's wait unbounded.
  refuseUnknownNames(options, SIDE_EFFECT_OPTION_NAMES, 'sideEffect()', CONTEXT_NAMES)
  checkBounds('sideEffect', options)
  // A NaN ttl would silently remember nothing, and the next call with this
  // key would run `fn` again: refused, not given a meaning. So is a negative
  // one (a TTL computed as `expiresAt - now` once past): the default store
  // kept nothing, a Redis store's `SET … PX -1` failed, and either way the
  // retry ran the side effect a second time.
  nonNegative('sideEffect', 'ttlMs', options.ttlMs)
  const store = options.store ?? defaultStore
  const ttlMs = options.ttlMs ?? DEFAULT_SIDE_EFFECT_TTL_MS
  let running = inFlight.get(store)
  if (running === undefined) {
    running = new Map()
    inFlight.set(store, running)
  }
  const until = { deadline: callDeadline(options.deadline), signal: options.signal }
  // A caller already out of time starts nothing: the side effect would
  // happen for a caller that cannot wait for it.
  if (until.signal?.aborted) return Promise.reject(until.signal.reason)
  try {
    until.deadline?.throwIfExpired()
  } catch (reason) {
    return Promise.reject(reason)
  }
  const shared = running.get(key)
  if (shared?.fn.pending && within(shared.fn)) {
    // Called from inside the run of its own key — a `runTurns` tool wrapping
    // its work in `sideEffect(context.key, fn, context)`: that run is this
    // operation's one run already, so `fn` is part of it. Joined, the run
    // waited for itself: `fn` never ran, and the agent hung until its
    // deadline (for ever without one).
    // Not bounded by this caller's deadline on its own (`untilEnded`): the
    // run's callers leave at theirs, and the run stays in progress — not
    // started again — until this `fn` has settled too. Bounded, a timed-out
    // inner call failed the run while its `fn` went on, and the next caller
    // with time left started the work a second time.
    return Promise.resolve().then(() => shadowAmbientIfFalse(options.deadline, () => fn(key)))
  }
  if (shared !== undefined) {
    // A run whose caller ran out of time before `fn` started is gone from
    // `running`: a caller joining it that still has time starts its own.
    // So does one whose run failed with its starter's deadline's or
    // signal's reason: `fn` runs under that caller's deadline (work for a
    // caller who left must stop), and its fetch was aborted for that
    // caller's reason, not this one's. Handed it, a joiner whose client was
    // still there answered a 502 for the starter's `ClientClosedError`, or a
    // 504 for its `DeadlineExceededError` with most of its own time left. A
    // run that throws is not remembered: running again is the rule anyway.
    return untilEnded(shared.promise as Promise<T>, until).catch((error: unknown) => {
      const again =
        isInstance(error, NotStarted) ||
        (endedReason(until) === undefined && stoppedForStarter(error, shared.starter))
      if (!again) throw error
      // `false` (none) stays none rather than becoming the ambient deadline.
      return sideEffect(key, fn, { ...options, deadline: until.deadline ?? options.deadline })
    })
  }

  // What `fn` runs for: this caller's deadline and signal, and the ambient
  // deadline `fn` runs under (the same one unless a deadline was given).
  const starter = [
    until.deadline,
    until.signal,
    options.deadline === false ? undefined : currentDeadline(),
  ]
  // `fn` while it runs: the work it does finds it in its context (`within`).
  const inProgress: Run['fn'] = { pending: true }
  // Set once `fn` has completed, before `run` resolves: the store's write.
  let recording: Promise<void> | undefined
  const run = (async () => {
    const kept = unrecorded.get(store)?.get(key)
    if (kept !== undefined) return kept.value as T
    // Waited for no longer than this caller's deadline or signal, and
    // checked again before `fn`: as on entry, a caller out of time starts
    // nothing. A read that answered late (a Redis client queueing commands
    // while Redis is down) ran `fn` — sent the email — for a caller long
    // gone, and one that never answered held the key for good, every later
    // call joining it and failing by its deadline.
    const done = await untilEnded(
      Promise.resolve().then(() => store.get(key)),
      until,
    ).catch((error: unknown) => {
      const ended = endedReason(until)
      if (ended !== undefined) throw new NotStarted(ended)
      // The store's own error, named as such (a stable code, the store's
      // error as its cause): told apart from what `fn` throws, it is not
      // taken for the tool's failure (`runTurns`).
      throw new SideEffectStoreError(key, error)
    })
    // `null` too: what a Redis GET answers for a missing key, and what a
    // store over it easily passes on. Read as a record, it failed every run
    // of the key with "Cannot read properties of null" and `fn` never ran.
    if (done !== undefined && done !== null) {
      // Nor is `{}` (HGETALL of a missing key, in a store over a Redis hash):
      // read as a record, it was a completed run of `undefined` — `fn` never
      // ran, its caller told it had. A record of `undefined` as JSON writes
      // it (`{ completedAtMs }`) is still one.
      if (typeof done !== 'object' || !('value' in done || 'completedAtMs' in done)) {
        throw new SideEffectStoreError(
          key,
          new TypeError(
            `its get() answered ${typeof done === 'object' ? 'an object with neither value nor completedAtMs' : `a ${typeof done}`}: no record ({ value, completedAtMs }), nor undefined or null for none`,
          ),
        )
      }
      return done.value as T
    }
    const ended = endedReason(until)
    if (ended !== undefined) throw new NotStarted(ended)
    // `false`: none for what `fn` starts too (a fetch, a model call), as in `callModel`.
    const value = await runWithContext(
      RUNNING_IN,
      { fn: inProgress, outer: readContext(RUNNING_IN) },
      () => shadowAmbientIfFalse(options.deadline, () => fn(key)),
    )
    inProgress.pending = false
    // Not awaited: the caller gets the result as soon as the side effect has
    // happened. Awaiting it held the result behind the store's write, so a
    // slow write (a Redis at seconds of latency) spent the caller's deadline
    // on bookkeeping and one that never answered (a client queueing
    // commands while Redis is down) lost it: the email sent, the caller —
    // and every re-run, joining that run — failed by its deadline. The run
    // stays in `running` until the write settles (below), so a call in
    // between gets this value rather than a store that does not know it yet.
    recording = record(store, key, { value, completedAtMs: Date.now() }, ttlMs)
    return value
  })()
  // Registered before the first await above resolves, so a caller arriving in
  // the same tick already finds the run.
  const entry: Run = { promise: run, starter, fn: inProgress }
  running.set(key, entry)
  const forget = () => {
    inProgress.pending = false
    if (running.get(key) === entry) running.delete(key)
  }
  run.then(() => (recording ?? Promise.resolve()).then(forget), forget)
  // The run goes on when this caller stops waiting (its deadline, its
  // signal): it is remembered when it completes, and callers joining it
  // meanwhile wait for it as above.
  return untilEnded(run, until).catch((error: unknown) => {
    throw isInstance(error, NotStarted) ? error.reason : error
  })
}

/** A run in progress, as callers with its key find it. */
interface Run {
  readonly promise: Promise<unknown>
  /** What ended for its starter ends `fn`'s work too (see `stoppedForStarter`). */
  readonly starter: ReadonlyArray<Deadline | AbortSignal | undefined>
  /**
   * Its `fn`, while it has not settled: a call from inside it would wait for
   * itself. Apart from the run, as the context carries it: a socket opened
   * inside `fn` keeps that context for its life, and must not keep the result.
   */
  readonly fn: { pending: boolean }
}

/** A run's `fn` the work in progress is part of, and the one it is nested in. */
interface Within {
  readonly fn: Run['fn']
  readonly outer: Within | undefined
}

/**
 * Whether the work in progress is part of `fn`, directly or through runs of
 * other keys nested in it (a → b → a waits for itself as well).
 */
function within(fn: Run['fn']): boolean {
  for (let at = readContext(RUNNING_IN); at !== undefined; at = at.outer) {
    if (at.fn === fn) return true
  }
  return false
}

/**
 * Whether a run failed because its starter's time ended: `error`, or an
 * error in its `cause` chain (Node's `AbortError` wraps the signal's
 * reason so), is the reason a deadline or signal of the starter's ended
 * with. Read at failure, once it has ended. Or, once a deadline or signal
 * of the starter's has ended, an abort error of `fn`'s own making: a
 * client that honours the signal but rejects with an `AbortError` it makes
 * itself, without the signal's reason as its cause (node-fetch, axios-style
 * clients, hand-written code) — the joiner with time left was handed the
 * starter's abort, and its tool never ran.
 */
function stoppedForStarter(error: unknown, starter: Run['starter']): boolean {
  const reasons: unknown[] = []
  for (const end of starter) {
    try {
      const reason = end instanceof AbortSignal ? end.aborted && end.reason : end?.reason
      if (typeof reason === 'object' && reason !== null) reasons.push(reason)
    } catch {
      // A deadline or signal of no known shape (a getter that throws): nothing to learn.
    }
  }
  // Also an expiry made for a starter's deadline before its timer ran: a
  // client refusing to send for lack of its budget (`minBudgetMs`, or `fn`'s
  // synchronous part spent it) — the deadline has no reason yet, and the
  // joiner with seconds left was handed the starter's 504.
  // By shape, not `instanceof`: the starter's deadline may come from another
  // installed copy of core (an Express app's `req.deadline`, the ambient one).
  const deadlines = starter.filter((end): end is Deadline => isDeadline(end))
  if (reasons.length === 0 && deadlines.length === 0) return false
  if (isAbortError(error) && (reasons.length > 0 || deadlines.some(expired))) return true
  let current = error
  for (let depth = 0; depth < 8; depth++) {
    if (reasons.includes(current)) return true
    if (isDeadlineExceeded(current) && deadlines.some((d) => isExpiryOf(current, d))) return true
    if (typeof current !== 'object' || current === null) return false
    let next: unknown
    try {
      next = (current as { cause?: unknown }).cause
    } catch {
      return false
    }
    if (next === current) return false
    current = next
  }
  return false
}

/** The deadline's time is up (read defensively: a getter that throws says no). */
function expired(deadline: Deadline): boolean {
  try {
    return deadline.expired
  } catch {
    return false
  }
}

/** A run that ended before `fn` started: its caller ran out of time while the store was read. */
class NotStarted {
  readonly reason: unknown
  constructor(reason: unknown) {
    this.reason = reason
  }
}

/** The reason the caller's deadline or signal ended with, or undefined while neither has. */
function endedReason(until: { deadline: Deadline | undefined; signal: AbortSignal | undefined }) {
  if (until.signal?.aborted) return until.signal.reason as unknown
  try {
    until.deadline?.throwIfExpired()
  } catch (reason) {
    return reason
  }
  return undefined
}

/** Writes a completed run to its store; never rejects. */
async function record(
  store: SideEffectStore,
  key: string,
  result: SideEffectRecord,
  ttlMs: number,
): Promise<void> {
  try {
    await store.set(key, result, ttlMs)
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
    local.set(key, result, ttlMs)
  }
}
