import { allowFanOut } from './allowFanOut.js'
import { coreChannels } from './channels.js'
import { type Clock, isClock, MAX_TIMER_MS, systemClock } from './clock.js'
import { DeadlineExceededError } from './DeadlineExceededError.js'
import { describeValue } from './describeValue.js'
import { hearAbort } from './hearAbort.js'
import { isAbortSignal } from './isAbortSignal.js'
import { isolated } from './isolated.js'
import { dueAt, firesExactly, wholeTimeout } from './ManualClock.js'
import { optionError } from './optionError.js'
import { type PlanEntry, type PlanOptions, SlicePlan, type SliceState } from './SlicePlan.js'
import { recordTimerLateness } from './timerLateness.js'

/**
 * The last plan made with `deadline.plan()` (undefined for a deadline of
 * another installed copy): what `runningSlice` reads. Not exported from the
 * package.
 */
export let lastPlanOf: (deadline: Deadline) => SlicePlan | undefined

/**
 * The last plan made on a deadline made under each deadline (`d.child(…)`,
 * a budget on trial, a slice of d's plan), at any depth: what `runningSlice`
 * reads after the deadline's own. Set only when a plan is made on a
 * deadline that has a parent (a request's own plan costs nothing); the last
 * one only, as `#lastPlan`. Weak both ways: the entry goes with the deadline
 * above, and the plan with the last of the code that holds it (its deadline,
 * a slice still live under it). A plan held by the entry itself kept, under
 * a deadline that lives as long as the process (a worker's shutdown
 * deadline every job's is made under, `Deadline.never()` as a parent), the
 * last job's plan, its deadline and all their callbacks held until the next
 * plan: for good in a process gone quiet. Not exported from the package.
 */
const lastPlanUnder = new WeakMap<object, WeakRef<SlicePlan>>()

/** See `lastPlanUnder`. Not exported from the package. */
export function lastPlanUnderOf(deadline: Deadline): SlicePlan | undefined {
  return typeof deadline === 'object' && deadline !== null
    ? lastPlanUnder.get(deadline)?.deref()
    : undefined
}

/**
 * The slice `run` started last, and not ended yet, in any plan made on a
 * deadline (undefined for a deadline of another installed copy): the newest
 * of those pending, the others linked from it (`SliceState.olderRun`). What
 * `runningSlice` reads after the last plan: one made before it on the same
 * deadline (`@hourglass/express`'s `deadline({ plan })`, then a route's own
 * on `req.deadline`) is no longer kept, but its step `run` started is still
 * pending. Not exported from the package.
 */
export let pendingRunOf: (deadline: Deadline) => SliceState | undefined

/**
 * Set what `pendingRunOf` gives (no-op on a deadline of another copy); a
 * slice that started later than any before it is kept as the last run
 * started too (`lastRunStartedOf`). Not exported from the package.
 */
export let setPendingRun: (deadline: Deadline, run: SliceState | undefined) => void

/**
 * The slice `run` started last, and not ended yet, in any plan made on a
 * deadline under this one, itself the topmost of its chain (undefined for
 * one with a parent, or of another installed copy): the newest of those
 * pending, the others linked from it (`SliceState.olderUnder`). What
 * `runningSlice` reads after the last plan made under a deadline: only that
 * one is kept (`lastPlanUnder`), and a step `run` started in an earlier
 * plan there (a budget on trial's, a later plan under it finished since)
 * is still pending. Kept at the top only, a deadline whose own chain is
 * rooted elsewhere filters it (`runningSlice`). Not exported from the package.
 */
export let pendingRunUnderOf: (top: Deadline) => SliceState | undefined

/** Set what `pendingRunUnderOf` gives (no-op on a deadline of another copy). Not exported from the package. */
export let setPendingRunUnder: (top: Deadline, run: SliceState | undefined) => void

/**
 * The topmost deadline of this installed copy above `deadline` (its parent,
 * its parent's parent…), undefined when it has no parent of this copy.
 * Bounded as `runningSlice`'s walk is. Not exported from the package.
 */
export let topAbove: (deadline: Deadline) => Deadline | undefined

/**
 * When the last slice `run` started in a plan on a deadline started, on the
 * count plans and slices are ordered by (0 for none, or for a deadline of
 * another copy), pending or not: a slice left behind before it is one the
 * code moved on from (`runningSlice`), after that step ended too. Not
 * exported from the package.
 */
export let lastRunStartedOf: (deadline: Deadline) => number

/**
 * @internal What `plan.run` does with its slice once the step has settled
 * and the slice is still live. Its own time no longer counts (the step is
 * over: no expiry of its own, no timer), but what the step started and left
 * running under the slice's signal — a hedged call that lost a
 * `Promise.any`, the other half of a `Promise.all` that failed fast, a body
 * read after the step — still stops when the plan's deadline ends: its
 * expiry or its cancel (the client left) cancels the slice with that
 * deadline's reason. Disposed instead, the slice was cut off from its
 * parent, and that work ran on past the request's 504 for as long as it
 * liked. Under a parent that never expires (or of another installed copy)
 * it is disposed as before: kept among such a parent's children, slices
 * would pile up for the life of the process. Not exported from the package.
 */
export let outliveStep: (deadline: Deadline) => void

/** The deadlines cancelled while live, their own time not up (see `cancelledBeforeItsTime`). */
const cutEarly = new WeakSet<Deadline>()

/**
 * True for a deadline cancelled while live with its own time not up, however
 * long ago: a slice cancelled so (the request answered 504 for a sibling
 * slice) is `cancelled`, not `exceeded`, when its step returns after its old
 * expiry. Not exported from the package.
 */
export function cancelledBeforeItsTime(deadline: Deadline): boolean {
  return cutEarly.has(deadline)
}

/**
 * The deadline each expiry's `DeadlineExceededError` was made by: where an
 * error that reaches a `guard` or a slice came from. Weak: the entry goes
 * with the error. One map for every installed copy of core, kept on a
 * global symbol as the context is: the error crosses copies with the
 * context (a gRPC client on one copy, the Express app's `deadlineErrors()`
 * on another). A map of each copy's own knew nothing of the other's marks,
 * and `isExpiryOf` took an error it had no entry for as the line's own: a
 * remote's cap marked `markForeignExpiry` by one copy, or an unrelated
 * deadline's expiry, was answered 504 `x-deadline-expired` by the other
 * with most of the request's time left. Only public members (`parent`) of
 * a deadline found here are read, so another copy's deadlines are walked
 * as this one's are.
 */
const EXPIRED_BY = Symbol.for('@hourglass/core.expiredBy.v1')
const expiredByHolder = globalThis as { [EXPIRED_BY]?: WeakMap<object, Deadline> }
expiredByHolder[EXPIRED_BY] ??= new WeakMap<object, Deadline>()
const expiredBy: WeakMap<object, Deadline> = expiredByHolder[EXPIRED_BY]

/**
 * @internal Record that `error`, made by code acting for `deadline` rather
 * than by its timer — `guard`'s and a slice's renamed error, a client's
 * refusal for lack of budget, a downstream's DEADLINE_EXCEEDED under the
 * budget it was sent — reports `deadline`'s expiry, so `isExpiryOf` knows it
 * as that deadline's line's own (an Express app's 504 for its request, not
 * an error of the app's). Returns `error`.
 */
export function markExpiryOf<E>(error: E, deadline: Deadline): E {
  if (typeof error === 'object' && error !== null) expiredBy.set(error, deadline)
  return error
}

/**
 * Stands for every deadline outside the caller's line (`markForeignExpiry`):
 * never expires, holds no timer; made when first needed. One for every
 * installed copy of core, on a global symbol as `expiredBy` is: a mark is
 * told by it (`isForeignExpiry`) whichever copy made it.
 */
const ELSEWHERE = Symbol.for('@hourglass/core.elsewhere.v1')
const elsewhereHolder = globalThis as { [ELSEWHERE]?: Deadline }

/**
 * True while `elsewhere` is made: it is no deadline of anyone's, so it
 * publishes no `hourglass:deadline:create` (subscribers counted, and a
 * tracer drew, a phantom deadline named `elsewhere`, never ended).
 */
let makingElsewhere = false

/**
 * @internal Record that `error` reports the expiry of a deadline outside the
 * line of whoever reads it, though not which one: a remote's own cap behind
 * a gRPC call, a job's cap, a retry refused for the back-off it needed —
 * while the caller's deadline still has its time. `isExpiryOf` is then false
 * for every deadline, so `@hourglass/express`'s `deadlineErrors()` passes it
 * on (`next(error)`) instead of answering 504 `x-deadline-expired` with most
 * of the request's time left. One sentinel for every package (grpc's client,
 * bullmq's `fromJobError`). Returns `error`.
 */
export function markForeignExpiry<E>(error: E): E {
  let elsewhere = elsewhereHolder[ELSEWHERE]
  if (elsewhere === undefined) {
    makingElsewhere = true
    try {
      elsewhere = Deadline.never({ name: 'elsewhere' })
    } finally {
      makingElsewhere = false
    }
    elsewhereHolder[ELSEWHERE] = elsewhere
  }
  return markExpiryOf(error, elsewhere)
}

/**
 * @internal True when `error` was marked `markForeignExpiry` (by any
 * installed copy of core): the expiry of a deadline outside every caller's
 * line. For code with no deadline to ask `isExpiryOf` about:
 * `@hourglass/express`'s `deadlineErrors()` without `deadline()` in the
 * chain answered such an error — a remote's own cap behind a gRPC call, a
 * job's — 504 `x-deadline-expired` as the request's expiry, where
 * `isExpiryOf` passes it on.
 */
export function isForeignExpiry(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false
  const elsewhere = elsewhereHolder[ELSEWHERE]
  return elsewhere !== undefined && expiredBy.get(error) === elsewhere
}

/**
 * @internal False only when `error` is known to be the expiry of a deadline
 * outside `deadline`'s own line: its timer's, or an error made for it
 * (`markExpiryOf`). Its own line is it, its ancestors (a reason inherited
 * from one, a cancel included) and its descendants (a step's own nameless
 * `child(ms)`: its time is the slice's to report), and errors made for them.
 * Such an unrelated deadline is one that merely passed through the work (a
 * `Deadline.after(20)` cap of the step's own): reported under the slice's
 * name, it told of the slice's expiry with most of its time left. An error
 * of no known deadline — a `DeadlineExceededError` the app made itself, as
 * for a downstream's 504 — counts as the line's own, as it always did. What
 * `guard` and `plan.run` check before reporting a deadline error as their
 * own, and `@hourglass/express` before answering one as the request's expiry.
 */
export function isExpiryOf(error: unknown, deadline: Deadline): boolean {
  if (typeof error !== 'object' || error === null) return false
  for (let d: Deadline | undefined = deadline; d !== undefined; d = d.parent) {
    if (d.reason === error) return true
  }
  const maker = expiredBy.get(error)
  if (maker === undefined) return true
  for (let d: Deadline | undefined = maker; d !== undefined; d = d.parent) {
    if (d === deadline) return true
  }
  // Made for an ancestor (a client's refusal for lack of the request's budget, inside a slice).
  for (let d = deadline.parent; d !== undefined; d = d.parent) {
    if (d === maker) return true
  }
  return false
}

export interface DeadlineOptions {
  /** The deadline this one lives under: it never outlives it (`min(parent, own)`). */
  parent?: Deadline | undefined
  /** Any other signal to follow: its abort cancels this deadline with the same reason. */
  signal?: AbortSignal | undefined
  /** Time source; defaults to the parent's clock, else the system clock. */
  clock?: Clock | undefined
  /** A name for this deadline (slices use the slice name); reported in errors. */
  name?: string | undefined
  /**
   * Observe only (dark mode): expiry is reported (`onExpire`, the
   * `hourglass:deadline:expire` event) but the signal is not aborted and
   * `throwIfExpired()` does not throw for it. Inherited from the parent.
   * Under an enforcing parent it is still ended when that parent expires
   * (cancelled with the parent's reason): the parent's caller was answered.
   */
  observe?: boolean | undefined
  /** Called once when the deadline expires (not when it is cancelled). */
  onExpire?: ((deadline: Deadline) => void) | undefined
  /**
   * Called once when `cancel()` ends this deadline while it is live (its
   * parent's cancel or its signal's abort too), with the reason, before the
   * listeners of its signal hear the abort (`done` is true and `reason` set;
   * a `signal` read before is aborted right after it returns, one first read
   * in it comes aborted): not at expiry, not by `dispose()`, not for a cancel of a
   * deadline already done (an observe-only one whose time passed included).
   * A deadline disposed while live is still live: its cancel calls it.
   */
  onCancel?: ((deadline: Deadline, reason: unknown) => void) | undefined
}

type State = 'live' | 'expired' | 'cancelled'

/**
 * An absolute point in (monotonic) time by which work must be done, plus the
 * means to stop that work: Go's `context.WithDeadline`, for Node.
 *
 * - A child never outlives its parent, and is aborted when the parent is.
 * - Resources (one timer, one entry in the parent's child set, one entry in
 *   the callers `hearAbort` holds for an external signal, heard through one
 *   listener on it for all of them) are released as soon as the deadline expires, is
 *   cancelled, or is disposed. `dispose()` releases without aborting. One
 *   exception: an `observe` deadline whose time ran out aborted nothing, so
 *   it keeps its parent entry and signal listener (a later cancel must still
 *   reach it) until it is cancelled, disposed or its parent ends: dispose
 *   dark-mode children you create under a long-lived parent.
 * - Parents hold children in a `Set`, not as `abort` listeners on their signal:
 *   a long-lived parent with a million short-lived children keeps no listener
 *   and no closure per child (the leak `AbortSignal.any` has on Node 20).
 * - The `AbortController` is created only when someone reads `signal`.
 */
export class Deadline {
  /** The time this deadline allowed when it was created, in ms (Infinity for `never()`). */
  readonly budgetMs: number
  /** Clock time at creation, in ms. */
  readonly startedAt: number
  /**
   * Clock time at expiry, in ms: Infinity for `never()`, and for a deadline
   * disposed while live — it no longer expires (see `dispose`), so whatever
   * reads the expiry (`remaining()`, `expired`, the headers written for the
   * next hop, a client's own timer) reads none, not the old one.
   */
  get expiresAt(): number {
    return this.#disposed ? Number.POSITIVE_INFINITY : this.#expiresAt
  }
  readonly clock: Clock
  readonly name: string | undefined
  readonly observe: boolean
  readonly parent: Deadline | undefined

  #state: State = 'live'
  // The expiry set at creation; `expiresAt` reads it unless disposed.
  #expiresAt: number
  // Disposed while live: it never expires after that (not by its own timer,
  // not by a child due at the same time, not by throwIfExpired). A field of
  // its own, not a state: a disposed deadline is neither done nor aborted.
  #disposed = false
  // `dispose()` was called, whenever: also after its time passed but before
  // its late timer ran (a busy loop), where `#disposed` stays false (it
  // keeps reading expired). The request is over: a child due with it must
  // not expire it then — its onExpire (a 504) and expire event came after
  // the handler had answered.
  #disposeCalled = false
  // Its `plan.run` step has settled (see `outliveStep`): no expiry of its
  // own any more; its parent's end cancels it with the parent's reason.
  #followsParent = false
  #reason: unknown
  #controller: AbortController | undefined
  #timer: unknown
  // What the armed timer's callback reaches this deadline through, emptied
  // when the timer is cleared: a clock whose setTimeout returns no handle
  // (its type allows it) cannot clear the timer, which then kept a deadline
  // long cancelled or disposed — and its parent — for its whole budget.
  #timerLink: TimerLink | undefined
  #children: Set<Deadline> | undefined
  #doneListeners: Set<(reason: unknown) => void> | undefined
  #onExpire: ((deadline: Deadline) => void) | undefined
  #onCancel: ((deadline: Deadline, reason: unknown) => void) | undefined
  // Stops hearing the external signal (the `signal` option). Through
  // `hearAbort`: one `abort` listener for every deadline and every wait on
  // that signal; a listener per deadline made a server that gives one
  // shutdown signal to every request's deadline warn "Possible EventTarget
  // memory leak detected. 11 abort listeners" at 11 requests in flight.
  #offSignal: (() => void) | undefined
  // The last plan made on this deadline (see `lastPlanOf`). The last only:
  // a long-lived deadline making a plan per job must not keep them all.
  #lastPlan: SlicePlan | undefined
  // The newest slice `run` started in a plan on this deadline and not ended
  // (see `pendingRunOf`). Unlinked as each ends: it holds no ended slice.
  #pendingRun: SliceState | undefined
  // Only on a deadline with no parent: the newest slice `run` started in a
  // plan on a deadline under it, not ended (see `pendingRunUnderOf`).
  #pendingRunUnder: SliceState | undefined
  // When the last of them started (see `lastRunStartedOf`).
  #lastRunStarted = 0

  private constructor(budgetMs: number, options: DeadlineOptions) {
    // Private to TypeScript only: from JavaScript, `new Deadline(5000)` threw
    // "Cannot read properties of undefined (reading 'parent')", naming
    // neither the mistake nor the way to make one.
    if (typeof options !== 'object' || options === null) {
      throw new TypeError(
        `Deadline: make one with Deadline.after(ms, options?) or Deadline.never(options?); the constructor is not public (got new Deadline(${describeValue(budgetMs)}))`,
      )
    }
    // `null` is none, as for every other option here: kept as the parent,
    // it crashed reading its expiry ("Cannot read properties of null") —
    // `Deadline.after(ms, { parent: req.deadline ?? null })` made nothing.
    const parent = options.parent ?? undefined
    if (options.clock != null && !isClock(options.clock)) {
      // Else "this.clock.now is not a function", naming no option.
      throw new TypeError(
        `Deadline: clock must be a Clock ({ now, setTimeout, clearTimeout }), got ${describeValue(options.clock)}`,
      )
    }
    if (options.signal != null && !isAbortSignal(options.signal)) {
      throw new TypeError(
        `Deadline: signal must be an AbortSignal, got ${describeValue(options.signal)}`,
      )
    }
    this.clock = options.clock ?? parent?.clock ?? systemClock
    this.parent = parent
    if (options.name != null && typeof options.name !== 'string') {
      // Else found at expiry: a Symbol (or an object whose toString throws)
      // made writing the DeadlineExceededError's message throw inside the
      // timer's callback — uncaught, the process ended — and left the
      // deadline done with no reason, its signal never aborted.
      throw new TypeError(`Deadline: name must be a string, got ${describeValue(options.name)}`)
    }
    // `null` is none, as for every option here (it read `in slice "null"`).
    this.name = options.name ?? undefined
    if (options.observe != null && typeof options.observe !== 'boolean') {
      // Read as truthy, `observe: 'false'` (an environment variable) turned
      // dark mode on: the deadline stopped being enforced.
      throw optionError('Deadline: observe', 'true or false', options.observe)
    }
    this.observe = options.observe ?? parent?.observe ?? false
    if (options.onExpire != null && typeof options.onExpire !== 'function') {
      // Called only at expiry, where its TypeError is reported as uncaught
      // (see `isolated`): the process died seconds after the bad call.
      throw new TypeError(
        `Deadline: onExpire must be a function, got ${describeValue(options.onExpire)}`,
      )
    }
    this.#onExpire = options.onExpire ?? undefined
    if (options.onCancel != null && typeof options.onCancel !== 'function') {
      // Found only at the cancel otherwise: a client leaving, far from the bad call.
      throw new TypeError(
        `Deadline: onCancel must be a function, got ${describeValue(options.onCancel)}`,
      )
    }
    // Before anything below that may cancel it (a parent or signal already aborted).
    this.#onCancel = options.onCancel ?? undefined
    const now = this.clock.now()
    if (typeof now !== 'number' || Number.isNaN(now)) {
      // NaN arithmetic never reaches an expiry: the deadline would never
      // expire, and never be written downstream, without a word.
      throw new TypeError(`clock.now() must return a number of ms, got ${String(now)}`)
    }
    this.startedAt = now
    const ownEnd = now + budgetMs
    // A parent disposed while live no longer expires (see `dispose`): a child
    // made now takes no expiry from it — only its own — and is still linked
    // below, so the parent's cancel reaches it.
    const parentEnd =
      parent === undefined ? Number.POSITIVE_INFINITY : parentEndOn(parent, this.clock, now)
    this.#expiresAt = Math.min(ownEnd, parentEnd)
    // The budget asked for, not `expiresAt - now`: with a fractional `now`
    // (performance.now) that difference reads 1990.0000000000002 for 1990.
    this.budgetMs = Math.max(0, ownEnd <= parentEnd ? budgetMs : parentEnd - now)

    if (coreChannels.deadlineCreate.hasSubscribers && !makingElsewhere) {
      coreChannels.deadlineCreate.publish(() => ({
        deadline: this,
        budgetMs: this.budgetMs,
        remainingMs: this.budgetMs,
      }))
      // A subscriber ended it (cancelled: a load shedder; disposed): it is
      // released already. Linked below, it was kept among its parent's
      // children, on its signal and by an armed timer until each ended. (An
      // observed expiry aborted nothing: it is still linked, as usual.)
      if (this.#aborts() || this.#disposeCalled) return
    }

    if (parent) {
      // A parent whose expiry was only observed aborted nothing and can still
      // be cancelled (the client leaves): a child made now must be linked to
      // it like any other, so that cancel reaches it. It expires, observed,
      // below.
      if (parent.#aborts()) {
        this.#adopt(parent)
        return
      }
      parent.#children ??= new Set()
      parent.#children.add(this)
    }
    const external = options.signal
    if (external) {
      if (external.aborted) {
        this.cancel(external.reason)
        return
      }
      this.#offSignal = hearAbort(external, () => this.cancel(external.reason))
    }
    if (this.#expiresAt <= now) this.#expire()
    else if (Number.isFinite(this.#expiresAt)) this.#arm(now)
  }

  /**
   * A deadline `ms` from now (under `parent`, if given). Negative budgets mean
   * "already expired"; `Infinity` means "no deadline of its own".
   */
  static after(ms: number, options: DeadlineOptions | null = {}): Deadline {
    // `null` reads as no options (it crashed reading `null.parent`).
    options ??= {}
    if (typeof ms !== 'number' || Number.isNaN(ms)) {
      // Shown as every option error shows a value: `String('100')` read as the number 100.
      throw new TypeError(
        `Deadline.after expects a number of milliseconds, got ${describeValue(ms)}`,
      )
    }
    const parent = options.parent
    // `#state in`: a brand check, no allocation (Deadline.after runs per request).
    if (parent != null && !(typeof parent === 'object' && #state in parent)) {
      return foreignChild(parent, ms, options)
    }
    return new Deadline(Math.max(0, ms), options)
  }

  /** A deadline that never expires on its own; it can still be cancelled. */
  static never(options: Omit<DeadlineOptions, 'parent' | 'onExpire'> | null = {}): Deadline {
    return new Deadline(Number.POSITIVE_INFINITY, options ?? {})
  }

  /**
   * Milliseconds left, never negative; Infinity for a deadline that never
   * expires (`never()`, or one disposed while live).
   */
  remaining(): number {
    if (this.#state === 'expired') return 0
    return Math.max(0, this.expiresAt - this.clock.now())
  }

  /** Milliseconds since the deadline was created. */
  elapsed(): number {
    return this.clock.now() - this.startedAt
  }

  /**
   * True once the time is up (whether or not the signal was aborted: see
   * `observe`). Never for a deadline disposed while live: it has no time to run out.
   */
  get expired(): boolean {
    return this.#state === 'expired' || this.clock.now() >= this.expiresAt
  }

  /** True once the deadline expired or was cancelled. */
  get done(): boolean {
    return this.#state !== 'live'
  }

  /** Why it ended: a `DeadlineExceededError`, the cancel reason, or undefined while live. */
  get reason(): unknown {
    return this.#reason
  }

  /**
   * Aborted with a `DeadlineExceededError` at expiry (unless observing), or
   * with the reason given to `cancel()`. Pass it to anything that takes a
   * signal: fetch, undici, child processes, streams.
   */
  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController()
      allowFanOut(this.#controller.signal)
      if (this.#aborts()) this.#controller.abort(this.#reason)
    }
    return this.#controller.signal
  }

  /**
   * True when `signal` is this deadline's own (`deadline.signal`), without
   * making one: code given a signal beside its deadline asks this instead of
   * comparing with `deadline.signal`, whose first read creates an
   * AbortController (~5 µs) for nothing when nobody had asked for it.
   */
  ownsSignal(signal: AbortSignal): boolean {
    return this.#controller !== undefined && this.#controller.signal === signal
  }

  /**
   * Call `listener` with the reason when this deadline aborts (expires, unless
   * observing, or is cancelled) — what `signal.addEventListener('abort')`
   * does, without creating an `AbortController` or an `EventTarget` listener:
   * the cheap path for code that runs on every request. Returns the
   * unsubscribe; call it when the work ends. If the deadline has already
   * aborted, `listener` is called at once.
   */
  onDone(listener: (reason: unknown) => void): () => void {
    if (typeof listener !== 'function') {
      // Else kept until the abort, then reported as uncaught there: a crash
      // of the process at some later expiry, far from the bad call.
      throw new TypeError(`onDone: listener must be a function, got ${describeValue(listener)}`)
    }
    if (this.#aborts()) {
      // Its throw reported on the next tick, as at the abort: thrown here,
      // it reached the caller only when the deadline had already ended.
      const reason = this.#reason
      isolated(() => listener(reason))
      return noop
    }
    this.#doneListeners ??= new Set()
    const listeners = this.#doneListeners
    listeners.add(listener)
    return () => {
      listeners.delete(listener)
    }
  }

  /**
   * Throws the reason if the deadline has ended (expiry is not thrown when
   * observing, nor once the deadline was disposed: it no longer expires —
   * disposed after its time passed but before its late timer ran included,
   * which reads expired yet gets no onExpire, abort or expire event: the
   * request is over. Checked by `#disposed` alone, a `wait` or `untilEnded`
   * asked under it after the response fired the 504 writer's onExpire).
   */
  throwIfExpired(): void {
    if (
      this.#state === 'live' &&
      !this.#disposeCalled &&
      !this.observe &&
      this.clock.now() >= this.#expiresAt
    )
      this.#expire()
    if (this.#aborts()) throw this.#reason
  }

  /**
   * A deadline under this one, `ms` from now or sooner if this one ends first.
   * Without `ms`, it shares this deadline's expiry but can be cancelled on its
   * own.
   */
  child(ms = Number.POSITIVE_INFINITY, options: Omit<DeadlineOptions, 'parent'> = {}): Deadline {
    return Deadline.after(ms, { ...options, parent: this })
  }

  /**
   * Split what is left into named slices: shares of the remaining time
   * (re-normalised over the slices not yet started) and/or fixed `{ ms }`.
   */
  plan(entries: Record<string, PlanEntry>, options?: PlanOptions): SlicePlan {
    const plan = new SlicePlan(this, entries, options)
    this.#lastPlan = plan
    // A parent of another installed copy still has a `parent` to walk; a
    // hostile one ends the walk, never the plan. Bounded: a chain of
    // deadlines is as deep as the code that made it, a cycle impossible.
    // One WeakRef for every level, made only for a plan with a parent.
    try {
      let ref: WeakRef<SlicePlan> | undefined
      for (let above = this.parent; above !== undefined; above = above.parent) {
        if (typeof above !== 'object' || above === null) break
        ref ??= new WeakRef(plan)
        lastPlanUnder.set(above, ref)
      }
    } catch {}
    return plan
  }

  static {
    outliveStep = (deadline) => {
      const parent = deadline.parent
      if (
        deadline.#state !== 'live' ||
        deadline.#disposeCalled ||
        parent === undefined ||
        !(#state in parent) ||
        !Number.isFinite(parent.expiresAt)
      ) {
        deadline.dispose()
        return
      }
      deadline.#clearTimer()
      deadline.#expiresAt = parentEndOn(parent, deadline.clock, deadline.clock.now())
      deadline.#followsParent = true
    }
    lastPlanOf = (deadline) =>
      typeof deadline === 'object' && deadline !== null && #lastPlan in deadline
        ? deadline.#lastPlan
        : undefined
    pendingRunOf = (deadline) =>
      typeof deadline === 'object' && deadline !== null && #pendingRun in deadline
        ? deadline.#pendingRun
        : undefined
    setPendingRun = (deadline, run) => {
      if (typeof deadline === 'object' && deadline !== null && #pendingRun in deadline) {
        deadline.#pendingRun = run
        if (run !== undefined && run.startedAt > deadline.#lastRunStarted) {
          deadline.#lastRunStarted = run.startedAt
        }
      }
    }
    lastRunStartedOf = (deadline) =>
      typeof deadline === 'object' && deadline !== null && #lastRunStarted in deadline
        ? deadline.#lastRunStarted
        : 0
    pendingRunUnderOf = (top) =>
      typeof top === 'object' && top !== null && #pendingRunUnder in top
        ? top.#pendingRunUnder
        : undefined
    setPendingRunUnder = (top, run) => {
      if (typeof top === 'object' && top !== null && #pendingRunUnder in top) {
        top.#pendingRunUnder = run
      }
    }
    topAbove = (deadline) => {
      // Only deadlines of this copy are walked: their `parent` is a plain field.
      if (typeof deadline !== 'object' || deadline === null || !(#pendingRunUnder in deadline)) {
        return undefined
      }
      let top: Deadline | undefined
      let at: unknown = deadline.parent
      // A chain is as deep as the code that made it; 64 bounds it all the same.
      for (let depth = 0; depth < 64; depth++) {
        if (typeof at !== 'object' || at === null || !(#pendingRunUnder in at)) break
        top = at as Deadline
        at = top.parent
      }
      return top
    }
  }

  /**
   * Abort now with `reason`; children are cancelled with the same reason. An
   * observe-only deadline that has expired aborted nothing, so it can still
   * be cancelled (the client left).
   */
  cancel(reason: unknown = new DOMException('This operation was aborted', 'AbortError')): void {
    // No walk (nor its closure) for a deadline without children: most are.
    if (this.#cancelSelf(reason) && this.#children !== undefined) {
      this.#descend((child) => child.#cancelSelf(reason))
    }
  }

  /** Cancels this deadline alone; false when it could not be (its children are then left as they are). */
  #cancelSelf(reason: unknown): boolean {
    if (this.#state !== 'live' && !(this.#state === 'expired' && this.observe)) return false
    // Read now: `expired` of a cancelled deadline turns true once its old
    // time passes, and a slice ended later (a step that ignored its signal)
    // was judged as one that ran out.
    if (this.#state === 'live' && this.clock.now() < this.#expiresAt) cutEarly.add(this)
    // Only a live deadline's cancel is heard: an observed expiry already ended it for its owner.
    const onCancel = this.#state === 'live' ? this.#onCancel : undefined
    this.#onCancel = undefined
    this.#state = 'cancelled'
    this.#reason = reason
    this.#release()
    // The owner first, as at expiry (see `#expire`). Isolated as `isolated`
    // does, without its closure: servers cancel a deadline per request.
    if (onCancel !== undefined) {
      try {
        onCancel(this, reason)
      } catch (error) {
        process.nextTick(() => {
          throw error
        })
      }
    }
    this.#controller?.abort(reason)
    this.#notifyDone(reason)
    if (coreChannels.deadlineCancel.hasSubscribers) {
      coreChannels.deadlineCancel.publish(() => ({ deadline: this, reason }))
    }
    return true
  }

  /**
   * Release this deadline's timer and its links to its parent and external
   * signal. It does not abort the signal (use `cancel()` for that). Disposed
   * while live, it no longer expires, and reads as a deadline that never
   * does (`expiresAt` and `remaining()` Infinity, `expired` false). Disposed
   * once ended, it keeps its end: an expired one still reads expired.
   */
  dispose(): void {
    // Live and its time not yet up: a timer that runs late (a busy loop) has
    // not marked an expiry that is already due, and one disposed then — a
    // request that finished after its deadline — keeps reading expired.
    if (this.#state === 'live' && this.clock.now() < this.#expiresAt) this.#disposed = true
    this.#disposeCalled = true
    this.#release()
  }

  [Symbol.dispose](): void {
    this.dispose()
  }

  /** Time the deadline out now (used by the timer, by parents, and when created already expired). */
  #expire(): void {
    if (!this.#expireSelf() || this.#children === undefined) return
    this.#descend(
      (child) => child.#expireSelf(),
      // An observe-only child of an enforcing deadline, its own subtree
      // expired (observed): cancelled with the parent's reason (#expireUnder).
      (child, parent) => {
        if (child.observe && !parent.observe) child.cancel(parent.#reason)
      },
      // An observe-only deadline keeps its children once expired: a later
      // cancel must reach them.
      (node) => node.observe,
    )
  }

  /**
   * Expires this deadline alone; true when its children are to expire after
   * it (`#expire` walks them: a child never outlives its parent, so they are
   * due too, under an observe-only parent as under an enforcing one).
   */
  #expireSelf(): boolean {
    if (this.#state !== 'live' || this.#disposed) return false
    // The highest of the enforcing ancestors due with it, found by a loop:
    // asking each parent in turn recursed once per level of a deep chain.
    let parent: Deadline | undefined
    for (
      let up = this.parent;
      up !== undefined &&
      up.#state === 'live' &&
      !up.#disposed &&
      !up.#disposeCalled &&
      !up.observe &&
      up.clock.now() >= up.#expiresAt;
      up = up.parent
    ) {
      parent = up
    }
    if (parent !== undefined) {
      // Due together with its parent (the same expiry, or a child made after
      // the parent's time passed but before its timer ran on a busy loop): the
      // parent goes first, so its onExpire — a server's 504 — comes before
      // anything this child aborts. It expires this child on its way.
      parent.#expire()
      if (this.#state !== 'live') return false
    }
    if (this.#followsParent) {
      // Its step is over: no expiry of its own to report. Its parent's end
      // stops what the step left running (an observe-only one's aborts nothing).
      const up = this.parent
      // biome-ignore lint/complexity/useOptionalChain: an optional chain cannot reach a private member (TS18030)
      if (up !== undefined && up.#aborts()) this.cancel(up.#reason)
      return false
    }
    this.#state = 'expired'
    // Expired by a parent whose timer fired in the same tick: the budget is spent.
    const elapsedMs = Math.max(this.clock.now() - this.startedAt, this.budgetMs)
    // An observed expiry aborts nothing, so it keeps what can still cancel it
    // (its parent, an external signal) and its children, which a later
    // cancel must reach; only its timer is done.
    if (this.observe) this.#clearTimer()
    else this.#release()
    if (!this.observe) {
      this.#reason = new DeadlineExceededError({
        budgetMs: this.budgetMs,
        elapsedMs,
        slice: this.name,
      })
      expiredBy.set(this.#reason as object, this)
    }
    // The owner's answer first (a server's 504 or DEADLINE_EXCEEDED), then
    // the signal and onDone: code that reacts to the abort at once — a
    // stream.pipeline given the signal destroys the response, a listener
    // writes its own error — must find the deadline's answer already sent,
    // not pre-empt it (the client got a reset or a cut 200 instead of a 504).
    const onExpire = this.#onExpire
    this.#onExpire = undefined
    // Never called once expired (see `cancel`): not kept alive with the deadline either.
    this.#onCancel = undefined
    if (onExpire) isolated(() => onExpire(this))
    if (!this.observe) {
      this.#controller?.abort(this.#reason)
      this.#notifyDone(this.#reason)
    }
    if (coreChannels.deadlineExpire.hasSubscribers) {
      coreChannels.deadlineExpire.publish(() => ({
        deadline: this,
        budgetMs: this.budgetMs,
        elapsedMs,
        observe: this.observe,
      }))
    }
    return true
  }

  /**
   * Expired with its enforcing parent. Its own time is up too (a child never
   * outlives its parent), so it expires as usual; an observe-only child's
   * expiry aborts nothing, but the parent's caller has been answered (a 504):
   * nobody waits for its work any more, so it is cancelled with the parent's
   * reason, as a cancel of the parent would. Its own earlier expiry, if any,
   * was only observed and left it here, live for a cancel.
   */
  #expireUnder(parent: Deadline): void {
    this.#expire()
    if (this.observe) this.cancel(parent.#reason)
  }

  /** Created under a parent that has already ended. */
  #adopt(parent: Deadline): void {
    if (parent.#state === 'expired') this.#expireUnder(parent)
    else this.cancel(parent.#reason)
  }

  #aborts(): boolean {
    return this.#state === 'cancelled' || (this.#state === 'expired' && !this.observe)
  }

  #arm(now = this.clock.now()): void {
    const delay = this.#expiresAt - now
    if (delay <= 0) {
      // Fired by our own timer (not at creation): how late it ran feeds the adaptive reserve.
      if (this.#timerLink !== undefined && this.clock.realTime === true) {
        recordTimerLateness(-delay)
      }
      this.#timer = undefined
      this.#timerLink = undefined
      this.#expire()
      return
    }
    // Node truncates fractional delays and libuv counts whole milliseconds, so
    // a timer can fire up to ~1 ms before the monotonic clock reaches
    // expiresAt: round up, and re-arm (above) if it still fires early. A
    // deadline never expires early. Not on a ManualClock, whose timers fire
    // at the very time asked for: rounded up there, a deadline with a
    // fraction of a ms left (a share slice's 33.33 ms) read `expired` once
    // `advance` reached its expiry, yet nothing had fired (no onExpire, no
    // abort, its slice still running) until the test advanced up to 1 ms
    // more. There it is due at `expiresAt` itself, not one float step past
    // (see `dueAt`). Past 2^31-1 ms Node's timers overflow:
    // far deadlines re-arm in steps — except on a ManualClock, whose timers
    // wait any delay whole (see `wholeTimeout`).
    const link: TimerLink = { deadline: this }
    this.#timerLink = link
    const fire = () => {
      // Cleared (see `#timerLink`): a timer its clock could not cancel does nothing.
      if (link.deadline !== undefined) link.deadline.#arm()
    }
    const exact = firesExactly(this.clock)
    const ms = exact ? delay : Math.ceil(delay)
    const whole = ms > MAX_TIMER_MS ? wholeTimeout(this.clock, fire, ms) : undefined
    this.#timer = whole ?? this.clock.setTimeout(fire, Math.min(ms, MAX_TIMER_MS))
    if (exact) dueAt(this.clock, this.#timer, this.#expiresAt)
  }

  #clearTimer(): void {
    if (this.#timerLink !== undefined) {
      this.#timerLink.deadline = undefined
      this.#timerLink = undefined
      this.clock.clearTimeout(this.#timer)
      this.#timer = undefined
    }
  }

  #release(): void {
    this.#clearTimer()
    if (this.parent) this.parent.#children?.delete(this)
    if (this.#offSignal !== undefined) {
      const off = this.#offSignal
      this.#offSignal = undefined
      off()
    }
  }

  #notifyDone(reason: unknown): void {
    const listeners = this.#doneListeners
    if (!listeners) return
    this.#doneListeners = undefined
    for (const listener of listeners) isolated(() => listener(reason))
  }

  /**
   * Ends every deadline under this one, depth first (a child's own children
   * before its next sibling), as nested calls did, but with a stack of its
   * own: a chain of 3,000 nested children overflowed the call stack, so its
   * root's cancel threw RangeError and its timer's expiry crashed the
   * process. `end` ends one child alone and says whether to descend into it.
   * `after` runs once a child's subtree is done (post-order, as code after
   * a nested call ran), and `keep` says which sets to keep (an observe-only
   * deadline's, once expired, for a later cancel).
   * Each child set is the live one, emptied only after: a child disposed on
   * the way (a sibling's onExpire, onCancel or onDone disposing it) takes
   * itself out (`#release`) and is skipped, as one disposed a moment before
   * is; none is added meanwhile (a child made under an ended deadline is
   * ended at creation).
   */
  #descend(
    end: (child: Deadline, parent: Deadline) => boolean,
    after?: (child: Deadline, parent: Deadline) => void,
    keep?: (node: Deadline) => boolean,
  ): void {
    const stack: Array<{ parent: Deadline; children: Iterator<Deadline> | undefined }> = []
    let parent: Deadline = this
    let children: Iterator<Deadline> | undefined = this.#children?.values()
    for (;;) {
      const next = children?.next()
      if (next === undefined || next.done === true) {
        if (children !== undefined && keep?.(parent) !== true) parent.#children = undefined
        const up = stack.pop()
        if (up === undefined) return
        // That child's subtree is done: its `after`, as a nested call returned.
        const done = parent
        ;({ parent, children } = up)
        after?.(done, parent)
        continue
      }
      const child = next.value
      if (end(child, parent) && child.#children !== undefined) {
        stack.push({ parent, children })
        parent = child
        children = child.#children.values()
      } else after?.(child, parent)
    }
  }
}

function noop(): void {}

/**
 * When `parent` expires, on `clock` (a child's) at its `now`. On the parent's
 * own clock, its `expiresAt`. A child given a clock of its own read that
 * point, on the parent's scale, as one on its own: two clocks start at
 * different times (a ManualClock at 0, `performance.now()` at the process's
 * age), so a child under a parent with 5 s left was born expired, or was
 * allowed hours. Read instead as the time the parent has left.
 */
function parentEndOn(parent: Deadline, clock: Clock, now: number): number {
  const end = parent.expiresAt
  if (parent.clock === clock || !Number.isFinite(end)) return end
  const left = end - parent.clock.now()
  return Number.isNaN(left) ? end : now + left
}

/** See `#timerLink`. */
interface TimerLink {
  deadline: Deadline | undefined
}

/**
 * A child of a deadline made by another installed copy of this package (two
 * versions in one node_modules tree; the context is shared between copies, so
 * `currentDeadline()` may return one): its private fields are not this
 * class's, and reading them threw "Receiver must be an instance of class
 * Deadline". Its own `child()` makes the same child — `min(parent, ms)`,
 * linked to it, aborted with it — so it makes it.
 */
function foreignChild(parent: unknown, ms: number, options: DeadlineOptions): Deadline {
  const child = (parent as { child?: unknown }).child
  if (typeof child !== 'function') {
    throw new TypeError(
      `Deadline.after: options.parent must be a Deadline, got ${describeValue(parent)}`,
    )
  }
  const { parent: _parent, ...rest } = options
  return child.call(parent, ms, rest) as Deadline
}
