// Node's own, not the globals: see `keepOpen`.
import { clearInterval, setInterval } from 'node:timers'
import { coreChannels, type SliceOutcome } from './channels.js'
import { MAX_TIMER_MS } from './clock.js'
import { runWithDeadline } from './context.js'
import {
  cancelledBeforeItsTime,
  type Deadline,
  isExpiryOf,
  lastPlanOf,
  outliveStep,
  pendingRunOf,
  pendingRunUnderOf,
  setPendingRun,
  setPendingRunUnder,
  topAbove,
} from './Deadline.js'
import { isDeadlineExceeded } from './DeadlineExceededError.js'
import { describeValue } from './describeValue.js'
import { endedBy } from './endedBy.js'
import { isAbortError } from './errorCode.js'
import { expiryError } from './expiryError.js'
import { optionError } from './optionError.js'
import { refuseUnknownOptions } from './refuseUnknownOptions.js'
import {
  SliceAlreadyStartedError,
  SliceEndedByRunError,
  SliceNotStartedError,
} from './SliceStateError.js'
import { UnknownSliceError } from './UnknownSliceError.js'

/** A share of the time left (any positive number; shares are relative) or a fixed `{ ms }`. */
export type PlanEntry = number | { ms: number }

export interface PlanOptions {
  /**
   * Kept back from every slice for writing the response, in ms. Default 10.
   * 0 gives the slices everything.
   */
  reserveMs?: number | undefined
}

const PLAN_OPTION_NAMES = Object.keys({ reserveMs: true } satisfies Record<keyof PlanOptions, true>)
const FIXED_ENTRY_NAMES = ['ms']

export interface SliceReport {
  name: string
  /** What the slice was given when it started, in ms (0 if it never started). */
  allottedMs: number
  /** How long it actually ran, in ms (0 if it never started). */
  usedMs: number
  outcome: SliceOutcome
}

/** What `end(name, outcome)` may say of a slice: every outcome but the two of a slice not over. */
const ENDED_OUTCOMES = ['ok', 'exceeded', 'observed', 'failed', 'cancelled'] as const

/**
 * One count for every plan made and every slice started, in this copy: what
 * tells `runningSlice` which came first. A count, not a clock read: two
 * made in the same ms are still ordered.
 */
let made = 0

/**
 * @internal The first slice `running` in `plan`, in plan order (its state,
 * not a copy), and when it started; undefined when none is. Not exported
 * from the package: what `runningSlice` reads.
 */
export let runningStateOf: (plan: SlicePlan) => RunningSliceState | undefined

/** @internal When `plan` was made, on the count slices start on (see `made`). */
export let madeAtOf: (plan: SlicePlan) => number

/** @internal What `runningStateOf` gives. */
export interface RunningSliceState {
  readonly name: string
  readonly run: boolean
  readonly deadline?: Deadline | undefined
  readonly startedAt: number
}

/** @internal A slice of a plan, as the plan keeps it. Not exported from the package. */
export interface SliceState {
  name: string
  entry: PlanEntry
  started: boolean
  /** When it started, on the count of `made` (0 before). */
  startedAt: number
  /** Started by `run`, which publishes its end with the error it rejects with. */
  run: boolean
  deadline?: Deadline
  allottedMs: number
  usedMs: number
  outcome: SliceOutcome
  /**
   * While `run`'s step is pending: the one started before it, and the one
   * after it, still pending in plans on the same deadline (see
   * `pendingRunOf`). A list through the slices themselves: nothing made per
   * `run`, and each is unlinked as it ends.
   */
  olderRun: SliceState | undefined
  newerRun: SliceState | undefined
  /**
   * While `run`'s step is pending in a plan on a deadline with a parent: the
   * topmost deadline above it, and the steps pending under that one started
   * before and after it (see `pendingRunUnderOf`). The same list through the
   * slices: a later plan under a request's deadline finishing left an
   * earlier one's pending step named by no 504.
   */
  topUnder: Deadline | undefined
  olderUnder: SliceState | undefined
  newerUnder: SliceState | undefined
}

/**
 * A deadline split into named steps. Each slice is a child deadline allotted
 * when it starts, from what is left *then*:
 *
 *   share slice:  (remaining − reserve − fixed slices not yet started)
 *                 × share / (sum of shares of share slices not yet started)
 *   fixed slice:  min(ms, remaining − reserve)
 *
 * so time a fast step leaves over flows to the later ones, and a slow step
 * cannot take the time of the steps after it. We compute this ourselves: no
 * library has slice semantics, and the arithmetic is the point.
 */
export class SlicePlan {
  readonly deadline: Deadline
  readonly reserveMs: number
  readonly #slices: SliceState[]
  readonly #madeAt = ++made

  static {
    runningStateOf = (plan) => plan.#slices.find((s) => s.outcome === 'running')
    madeAtOf = (plan) => plan.#madeAt
  }

  constructor(
    deadline: Deadline,
    entries: Record<string, PlanEntry>,
    options: PlanOptions | null = {},
  ) {
    this.deadline = deadline
    // `plan(null)` failed inside Object.entries with "Cannot convert undefined
    // or null to object", naming neither the plan nor the value; a string or
    // an array was split into slices named "0", "1", …
    if (typeof entries !== 'object' || entries === null || Array.isArray(entries)) {
      throw optionError('plan: entries', 'an object of { name: share or { ms } }', entries)
    }
    // A Map's entries are no own properties: read as a record it was a plan
    // with no slices, taken without a word (express's `deadline({ plan })`
    // too), and every `run` then failed with UNKNOWN_SLICE, "it has none".
    if (entries instanceof Map) {
      throw new TypeError(
        'plan: entries must be an object of { name: share or { ms } }, got a Map (pass Object.fromEntries(map))',
      )
    }
    // `null` options read as none, like an omitted argument (not a crash
    // reading `null.reserveMs`).
    if (options !== null && options !== undefined && typeof options !== 'object') {
      throw optionError('plan: options', 'an object', options)
    }
    // Slice names are the caller's own (`run` refuses a misspelt one), the
    // option is not: ignored, `{ reserveMS: 0 }` left every slice 10 ms short.
    refuseUnknownOptions(options ?? undefined, PLAN_OPTION_NAMES, 'plan()')
    const reserveMs = options?.reserveMs ?? 10
    if (typeof reserveMs !== 'number' || !Number.isFinite(reserveMs) || reserveMs < 0) {
      throw optionError('reserveMs', 'a finite number ≥ 0', reserveMs)
    }
    this.reserveMs = reserveMs
    this.#slices = Object.entries(entries).map(([name, entry]) => {
      // A fixed slice has `ms` alone: `{ ms: 50, max: 80 }` read as a bound
      // nothing enforces, `{ MS: 50 }` as a slice of no ms, unexplained.
      if (typeof entry === 'object' && entry !== null && !Array.isArray(entry)) {
        refuseUnknownOptions(entry, FIXED_ENTRY_NAMES, `slice ${JSON.stringify(name)}`, {
          what: 'key',
        })
      }
      const valid =
        typeof entry === 'number'
          ? Number.isFinite(entry) && entry > 0
          : typeof entry === 'object' &&
            entry !== null &&
            Number.isFinite(entry.ms) &&
            entry.ms >= 0
      if (!valid) {
        // describeValue, not JSON.stringify: a BigInt share threw "Do not
        // know how to serialize a BigInt" instead of naming the slice.
        const fixed = typeof entry === 'object' && entry !== null && !Array.isArray(entry)
        const value: unknown = fixed ? (entry as { ms?: unknown }).ms : entry
        const shown = fixed ? `{ ms: ${describeValue(value)} }` : describeValue(value)
        const message = `slice "${name}" must be a positive share or { ms: ≥ 0 }, got ${shown}`
        throw typeof value === 'number' ? new RangeError(message) : new TypeError(message)
      }
      return {
        name,
        entry,
        started: false,
        startedAt: 0,
        run: false,
        allottedMs: 0,
        usedMs: 0,
        outcome: 'not-started',
        olderRun: undefined,
        newerRun: undefined,
        topUnder: undefined,
        olderUnder: undefined,
        newerUnder: undefined,
      }
    })
    // Shares are relative, each finite, but their sum can overflow (1e308 +
    // 1e308): every share slice was then allotted Infinity / Infinity = NaN
    // and failed to start with a TypeError about NaN milliseconds.
    let shares = 0
    for (const s of this.#slices) if (typeof s.entry === 'number') shares += s.entry
    if (!Number.isFinite(shares)) {
      throw new RangeError(`slice shares must add up to a finite number, got ${String(shares)}`)
    }
  }

  /**
   * What `slice(name)` would allot if it started now, in ms; for a slice that
   * has started, what it was allotted then (as `report()` says).
   */
  allotment(name: string): number {
    const state = this.#get(name)
    // A started slice is no longer among the shares left to split: its own
    // share over the others' gave a figure nobody was given (Infinity once
    // it was the last).
    if (state.started) return state.allottedMs
    // A deadline disposed while live (the handler opted out of it) reads
    // Infinity here: its share slices are unbounded, fixed `{ ms }` slices
    // their ms, as a never-ending deadline's are.
    const available = Math.max(0, this.deadline.remaining() - this.reserveMs)
    if (typeof state.entry !== 'number') return Math.min(state.entry.ms, available)
    let fixedAhead = 0
    let shares = 0
    for (const s of this.#slices) {
      if (s.started) continue
      if (typeof s.entry === 'number') shares += s.entry
      else fixedAhead += s.entry.ms
    }
    if (!Number.isFinite(available)) return Number.POSITIVE_INFINITY
    // The share of the shares first: share × time could overflow (1e307 × 1000).
    return Math.max(0, available - fixedAhead) * (state.entry / shares)
  }

  /**
   * Start slice `name`: a child deadline allotted its part of what is left.
   * Dispose it (or call `end(name)`, or use `run`) when the step ends:
   * disposing it ends the slice — `ok`, or `exceeded` / `cancelled` when its
   * deadline had already ended so, or `observed` when it was observe-only
   * and its time had run out. A slice starts once.
   */
  slice(name: string): Deadline {
    const state = this.#get(name)
    const deadline = this.#start(state)
    // A slice ended only by `dispose()` (as `using` does) stayed `running` in
    // report(), with no sliceEnd: its span never ended. An own method on this
    // one deadline, not a hook on every Deadline: `run` ends its slices itself.
    const dispose = deadline.dispose
    deadline.dispose = () => {
      this.#end(state, deadline, endedAs(deadline))
      dispose.call(deadline)
    }
    return deadline
  }

  #start(state: SliceState): Deadline {
    const { name } = state
    if (state.started) throw new SliceAlreadyStartedError(name)
    const allottedMs = this.allotment(name)
    state.started = true
    state.startedAt = ++made
    state.outcome = 'running'
    state.allottedMs = allottedMs
    const deadline = this.deadline.child(allottedMs, { name })
    state.deadline = deadline
    if (coreChannels.sliceStart.hasSubscribers) {
      coreChannels.sliceStart.publish(() => ({ deadline, slice: name, allottedMs }))
    }
    return deadline
  }

  /**
   * Run one step inside its slice. The step gets the slice's signal and
   * deadline, and `currentDeadline()` inside it is the slice. When the slice
   * runs out, `run` rejects at once with a `DeadlineExceededError` naming the
   * slice — even if the step ignores its signal.
   */
  async run<T>(
    name: string,
    step: (signal: AbortSignal, slice: Deadline) => T | Promise<T>,
  ): Promise<T> {
    const state = this.#get(name)
    // Refused before the slice starts: a step that is no function (a
    // promise passed where `() => promise` belongs, an `undefined` from a
    // typo) started the slice, published its start and end, reported it
    // `failed`, and rejected with "step is not a function".
    if (typeof step !== 'function') {
      // A promise passed as the step fails on its own: handled here, or its
      // rejection, with nobody listening, crashed the process.
      if (typeof (step as { then?: unknown } | null)?.then === 'function') {
        Promise.resolve(step).catch(() => {})
      }
      throw new TypeError(`plan.run: step must be a function, got ${describeValue(step)}`)
    }
    const slice = this.#start(state)
    state.run = true
    this.#linkRun(state)
    const signal = slice.signal
    let onAbort: (() => void) | undefined
    let holdOpen: ReturnType<typeof setInterval> | undefined
    try {
      // A slice that is over before its step starts (nothing left to allot,
      // the request already cancelled) does not start it: `run` has already
      // given up, and a step that ignores its signal would do work — a paid
      // model call — that nobody will wait for.
      const work = Promise.resolve().then(() => {
        if (signal.aborted) throw signal.reason
        return runWithDeadline(slice, () => step(signal, slice))
      })
      const stopped = new Promise<never>((_, reject) => {
        onAbort = () => reject(signal.reason)
        if (signal.aborted) onAbort()
        else signal.addEventListener('abort', onAbort, { once: true })
      })
      // The step may settle after we gave up on it; nobody awaits it then.
      work.catch(() => {})
      stopped.catch(() => {})
      // The slice's timer is unref'd, as every deadline's: a script awaiting
      // a step that holds no handle of its own (a promise on an event that
      // never comes) exited with code 13 before the slice could run out,
      // where `wait` and `guard` reject. So on a real clock an enforcing
      // slice with an expiry holds the process open until `run` settles —
      // by its expiry at the latest — with a system interval that does
      // nothing (as `wait(Infinity)` does). Not on a test clock, whose time
      // is the test's.
      if (
        slice.clock.realTime === true &&
        !slice.observe &&
        !signal.aborted &&
        Number.isFinite(slice.expiresAt)
      ) {
        holdOpen = setInterval(keepOpen, MAX_TIMER_MS)
      }
      const value = await Promise.race([work, stopped])
      // Finished after its slice's time ran out, before the slice's timer had
      // its turn: a synchronous part that kept the loop busy (a CPU-bound
      // parse). Resolved `ok`, the overrun went unreported, and when it had
      // used up the whole request the next slice, allotted 0, was named as
      // the one that ran out. Enforced, the slice is over, as it would be had
      // the step awaited once more: expire it now (its parent first when due
      // with it: a server's 504 then names this slice) and reject. Dark mode
      // reports it `observed` (finishedAs).
      if (!slice.observe && slice.expired) slice.throwIfExpired()
      this.#end(state, slice, finishedAs(slice))
      return value
    } catch (error) {
      const named = this.#name(error, slice)
      this.#end(state, slice, outcomeOf(named, slice), named)
      throw named
    } finally {
      if (holdOpen !== undefined) clearInterval(holdOpen)
      if (onAbort) signal.removeEventListener('abort', onAbort)
      // Ended above (`#end` unlinks it); again in case naming the error threw.
      this.#unlinkRun(state)
      // Not disposed: what the step left running under the slice still
      // stops when the plan's deadline ends (see `outliveStep`).
      outliveStep(slice)
    }
  }

  /**
   * Add a slice `run` started to the ones pending on the plan's deadline, as
   * the newest: only the last plan made on a deadline is kept, and without
   * this an earlier plan's step still pending (`deadline({ plan })`'s, the
   * route having made a plan of its own on `req.deadline` since) was named
   * by no 504.
   */
  #linkRun(state: SliceState): void {
    const newest = pendingRunOf(this.deadline)
    state.olderRun = newest
    if (newest !== undefined) newest.newerRun = state
    setPendingRun(this.deadline, state)
    // Under another deadline (a budget on trial, a cap): pending under its
    // top too. A plan on a deadline with no parent (a request's own) skips it.
    if (this.deadline.parent === undefined) return
    const top = topAbove(this.deadline)
    if (top === undefined) return
    const newestUnder = pendingRunUnderOf(top)
    state.topUnder = top
    state.olderUnder = newestUnder
    if (newestUnder !== undefined) newestUnder.newerUnder = state
    setPendingRunUnder(top, state)
  }

  /** Take a slice `run` started out of the pending ones (see `#linkRun`); twice is a no-op. */
  #unlinkRun(state: SliceState): void {
    const { olderRun, newerRun } = state
    if (newerRun !== undefined) newerRun.olderRun = olderRun
    else if (pendingRunOf(this.deadline) === state) setPendingRun(this.deadline, olderRun)
    if (olderRun !== undefined) olderRun.newerRun = newerRun
    state.olderRun = undefined
    state.newerRun = undefined
    const top = state.topUnder
    if (top === undefined) return
    const { olderUnder, newerUnder } = state
    if (newerUnder !== undefined) newerUnder.olderUnder = olderUnder
    else if (pendingRunUnderOf(top) === state) setPendingRunUnder(top, olderUnder)
    if (olderUnder !== undefined) olderUnder.newerUnder = newerUnder
    state.topUnder = undefined
    state.olderUnder = undefined
    state.newerUnder = undefined
  }

  /** One row per slice, in plan order. Slices still running report the time used so far. */
  report(): SliceReport[] {
    return this.#slices.map((s) => ({
      name: s.name,
      allottedMs: round(s.allottedMs),
      usedMs: round(s.deadline && s.outcome === 'running' ? s.deadline.elapsed() : s.usedMs),
      outcome: s.outcome,
    }))
  }

  /**
   * Mark a slice started with `slice()` as finished (what `run` does for
   * you). Without `outcome`, judged as disposing it is: `ok`, `exceeded`,
   * `cancelled` or `observed`.
   */
  end(name: string, outcome?: Exclude<SliceOutcome, 'not-started' | 'running'>): void {
    const state = this.#get(name)
    if (!state.deadline) throw new SliceNotStartedError(name)
    // `run` ends its slices itself. Ended here while its step was pending,
    // the slice was disposed: `run` then never rejected, not even at the
    // plan's deadline, and the slice read `ok`. Once the step has settled
    // the slice follows the plan's deadline (see `outliveStep`): disposed,
    // what the step left running no longer stopped with it.
    if (state.run) {
      if (state.outcome !== 'running') return
      throw new SliceEndedByRunError(name)
    }
    // From plain JS any string was taken, and report() and the sliceEnd
    // event then carried an outcome no reader of them handles.
    if (outcome !== undefined && !(ENDED_OUTCOMES as readonly unknown[]).includes(outcome)) {
      throw new TypeError(
        `plan.end: outcome must be ${ENDED_OUTCOMES.slice(0, -1)
          .map((o) => `'${o}'`)
          .join(', ')} or '${ENDED_OUTCOMES.at(-1)}', got ${describeValue(outcome)}`,
      )
    }
    this.#end(state, state.deadline, outcome ?? endedAs(state.deadline))
    state.deadline.dispose()
  }

  #end(state: SliceState, slice: Deadline, outcome: SliceOutcome, error?: unknown): void {
    if (state.outcome !== 'running') return
    // Slices of a plan made inside this one (`slice.plan(…)`) that ended
    // with it — its expiry or its cancel reached them — end first, as they
    // would have had they settled first: the abort reaches this slice's
    // `run` before theirs, and a tracer ending spans on `sliceEnd` showed a
    // child span ending after its parent.
    const nested = lastPlanOf(slice)
    if (nested !== undefined) nested.#endAborted()
    state.usedMs = slice.elapsed()
    state.outcome = outcome
    if (state.run) this.#unlinkRun(state)
    if (coreChannels.sliceEnd.hasSubscribers) {
      coreChannels.sliceEnd.publish(() => ({
        deadline: slice,
        slice: state.name,
        allottedMs: state.allottedMs,
        usedMs: state.usedMs,
        outcome,
        error,
      }))
    }
  }

  /**
   * End the running slices whose deadline has aborted (expired or
   * cancelled), as their own `run` or `dispose` would end them: with the
   * deadline's reason, which their `run` rejects with. One still live runs on.
   */
  #endAborted(): void {
    for (const state of this.#slices) {
      const deadline = state.deadline
      if (state.outcome !== 'running' || deadline === undefined) continue
      if (deadline.reason === undefined) continue
      const reason = this.#name(deadline.reason, deadline)
      this.#end(state, deadline, outcomeOf(reason, deadline), state.run ? reason : undefined)
    }
  }

  /**
   * A nameless deadline error of the slice's own line while it ran — the
   * plan's deadline or one above it, or a deadline made under the slice
   * (`slice.child(50)`; see `isExpiryOf`) — is reported as this slice's.
   * Not one of an unrelated deadline inside the step (a cap of its own on
   * a call): renamed, it told of the slice's expiry with most of the
   * slice's time left.
   */
  #name(error: unknown, slice: Deadline): unknown {
    if (isDeadlineExceeded(error) && error.slice === undefined && isExpiryOf(error, slice)) {
      return expiryError(slice, { cause: error })
    }
    return error
  }

  #get(name: string): SliceState {
    const state = this.#slices.find((s) => s.name === name)
    if (!state) {
      throw new UnknownSliceError(
        name,
        this.#slices.map((s) => s.name),
      )
    }
    return state
  }
}

/** How a slice whose step finished stands: by how its deadline ended, if it did. */
function endedAs(slice: Deadline): SliceOutcome {
  return slice.reason === undefined ? finishedAs(slice) : outcomeOf(slice.reason, slice)
}

/**
 * A step that finished is `ok`, unless its slice's time ran out first:
 * `observed` when it only observed (dark mode: enforcement would have cut
 * it, and an `ok` hid the overrun from the very report dark mode is rolled
 * out to read), `exceeded` when enforced (its timer had not run yet).
 */
function finishedAs(slice: Deadline): SliceOutcome {
  // Enforced and past its time, its timer not yet run (a busy loop): it ran
  // out all the same (a deadline disposed then still reads expired).
  if (slice.expired) return slice.observe ? 'observed' : 'exceeded'
  return 'ok'
}

function outcomeOf(error: unknown, slice: Deadline): SliceOutcome {
  // Judged by what ended the work: a streamed answer cut by the slice's
  // deadline fails with a wrapper whose cause is the deadline's error.
  const ended = endedBy(error)
  // Only its own line's expiry (as `#name` judges it): an unrelated
  // deadline's error — a cap of the step's own that it did not handle — is a
  // failure of the step, not the slice running out with its time left.
  if (isDeadlineExceeded(ended)) {
    if (!isExpiryOf(ended, slice)) return 'failed'
    // Cancelled with a deadline's error while its own time was not up (the
    // request answered 504 for a sibling slice that ran out, or the app's
    // reportExpired): cancelled, as for any other reason — also when its
    // step returns after its old time. Read `exceeded`, a step with 800 ms
    // left was counted and traced as the one that ran out.
    return cancelledWith(error, slice) && cancelledBeforeItsTime(slice) ? 'cancelled' : 'exceeded'
  }
  if (ended !== undefined || isAbortError(error)) return 'cancelled'
  // Ended by the slice's own cancel, whatever reason it was given: `cancel`
  // takes any value (a shutdown `Error`, a string, a `TimeoutError`), and
  // judged by its type such a slice read `failed`, as if its step had
  // broken. The reason itself, or a wrapper carrying it as its cause. A
  // step's own error while its slice is live stays `failed`.
  // (An observe-only slice whose time ran out is done with no reason.)
  return cancelledWith(error, slice) ? 'cancelled' : 'failed'
}

/** Ended by the slice's own cancel: its reason, or a wrapper carrying it as its cause. */
function cancelledWith(error: unknown, slice: Deadline): boolean {
  const reason = slice.reason
  return slice.done && reason !== undefined && carries(error, reason)
}

/** Deep enough for any wrapping seen in practice (as `endedBy`); bounds a cyclic chain. */
const MAX_CAUSE_DEPTH = 8

/** True when `error` is `reason`, or has it in its `cause` chain. */
function carries(error: unknown, reason: unknown): boolean {
  let current = error
  for (let depth = 0; depth <= MAX_CAUSE_DEPTH; depth++) {
    if (current === reason) return true
    if (typeof current !== 'object' || current === null) return false
    try {
      current = (current as { cause?: unknown }).cause
    } catch {
      return false // a hostile getter
    }
  }
  return false
}

function round(ms: number): number {
  return Number.isFinite(ms) ? Math.round(ms * 10) / 10 : ms
}

/**
 * What the interval holding a running step's process open runs: nothing. Set
 * with `node:timers`' own `setInterval` (an ESM import, which fake timers
 * leave alone, as `wait`'s): faked, `vi.runAllTimers()` with a step pending fired it 10,000
 * times and threw "Aborting after running 10000 timers".
 */
function keepOpen(): void {}
