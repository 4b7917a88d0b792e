import { AsyncResource } from 'node:async_hooks'
import { type Clock, MAX_TIMER_MS, type TimerOptions } from './clock.js'
import { describeValue } from './describeValue.js'
import { optionError } from './optionError.js'

/**
 * @internal Schedule `callback` after `ms` (finite, > 2³¹−1) on a
 * ManualClock, whole: its `setTimeout` cuts such a delay to 2³¹−1 ms, as
 * Node's timers would, and a far deadline or wait re-armed in steps of it —
 * about 4.2 million timers fired to advance to Number.MAX_SAFE_INTEGER, a
 * second of CPU. A ManualClock's timers cannot overflow, so a `Deadline` and
 * `wait` ask for the whole delay here. The handle, as `setTimeout`'s;
 * `undefined` for any other clock (it steps). A `keepAlive` timer (a wait's,
 * which something awaits) is `undefined` too on a clock whose `setTimeout`
 * is not ManualClock's own: a subclass that overrides it to see the waits
 * armed on it (and drive time to the next one) must see this one, in steps.
 * Not exported from the package.
 */
export let wholeTimeout: (
  clock: unknown,
  callback: () => void,
  ms: number,
  options?: TimerOptions,
) => unknown

/**
 * @internal Whether `clock` is a ManualClock (a subclass too), whose timers
 * fire at the very time asked for, fractions included: a `Deadline` rounds
 * its timer's delay up to a whole ms on every other clock (Node truncates
 * fractions). Not exported from the package.
 */
export let firesExactly: (clock: unknown) => boolean

/**
 * @internal On a ManualClock, make the timer `handle`, just armed for
 * `at - now()`, due at `at` itself when it would be due after it. The clock
 * adds that delay back to its `now`, and the round trip can land one float
 * step past `at` (0.3 + (0.9 − 0.3) is 0.9000000000000001): a deadline
 * armed after its start (a child left to its own timer by a disposed
 * parent) then read `expired` at 0.9 while its timer had not fired — no
 * abort, no onExpire — until the next `advance`. A step short is left
 * alone: the timer fires, finds time left and re-arms for the last step;
 * moved later, a clock subclass that records the delay it was given (llm's
 * WaitClock, fetch's retry test) would report it due where it is not. A
 * driver that advances by `next - now()` can itself land a step short, and
 * advances once more (llm's `drive`). No float delay lands every `at`
 * exactly (0.3 → 0.9 has none): hence this move. Only a timer armed
 * for exactly that delay moves (a subclass that passed on another delay
 * keeps its own); a no-op on any other clock. Not exported from the package.
 */
export let dueAt: (clock: unknown, handle: unknown, at: number) => void

/**
 * The three operations above as the copy of core that made a ManualClock
 * performs them on it, kept on its prototype under a `Symbol.for` key: a
 * ManualClock of another installed copy (the app's tests hand theirs to
 * @hourglass/express, which has its own copy) has none of this copy's
 * private fields, so `#timers in clock` was false, and its deadlines and
 * waits were rounded up to whole ms (a 0.5 ms deadline read `expired` at
 * `advance(0.5)` with nothing fired) and far ones stepped in 2^31-1 ms
 * timers. Each copy's own, never delegating again.
 */
interface ManualClockOps {
  wholeTimeout: typeof wholeTimeout
  firesExactly: typeof firesExactly
  dueAt: typeof dueAt
}
const OPS = Symbol.for('@hourglass/core.manualClockOps.v1')
let own: ManualClockOps

/** The operations of the copy that made `clock`, when it is a ManualClock of another copy. */
function foreignOps(clock: unknown): ManualClockOps | undefined {
  if (typeof clock !== 'object' || clock === null) return undefined
  try {
    const ops = (clock as { [OPS]?: unknown })[OPS]
    if (typeof ops !== 'object' || ops === null || ops === own) return undefined
    // Each one a function, or none is used: a clock carrying something else
    // under the key (`{}`) made Deadline.after throw "… is not a function".
    const { wholeTimeout, firesExactly, dueAt } = ops as Partial<ManualClockOps>
    return typeof wholeTimeout === 'function' &&
      typeof firesExactly === 'function' &&
      typeof dueAt === 'function'
      ? { wholeTimeout, firesExactly, dueAt }
      : undefined
  } catch {
    return undefined // a revoked Proxy, a throwing getter
  }
}

interface PendingTimer {
  handle: object
  at: number
  seq: number
  callback: () => void
  // Set with no delay by a callback `advance` was running, due at the very
  // time that callback ran: its place in that chain of such timers, 1 when
  // the callback was a timer's with a delay, its own chain's + 1 when it
  // was one of these; 0 for any other timer (see `IMMEDIATE_CHAIN_LIMIT`).
  chain: number
}

/**
 * How long a chain of timers each set with no delay by the one before (see
 * `PendingTimer.chain`) `advance` fires, time standing still, before it gives
 * up with a `RangeError`, the time left where it stands and that timer
 * pending. A callback that re-arms itself at once (`const poll = () => { if
 * (!ready()) clock.setTimeout(poll, 0) }`, a pacing delay computed as 0) is
 * due again at the very time it ran: `advance` fired it for ever,
 * synchronously — the test worker hung, past every test timeout. Node waits
 * 1 ms for each, so in production it polls; here time would never move.
 * One chain, not every such timer the step fires: a batch that each hand
 * their work on with no delay (10,001 deadlines due together, each `onDone`
 * setting a timer of 0) ends, and counted together it was refused.
 */
const IMMEDIATE_CHAIN_LIMIT = 10_000

/**
 * A clock that moves only when told to. `advance(ms)` fires every timer that
 * falls due, in order, synchronously — tests assert on what happened without
 * sleeping.
 *
 * Timers due in one `advance` run back to back (by due time, then by
 * creation), with no microtask checkpoint between them, where Node runs the
 * microtask queue after each of its own: a promise reaction one timer's
 * callback queues (p-timeout clearing its timer once the race is settled)
 * runs after `advance` returns, not before the next timer. It cannot do
 * otherwise and stay synchronous — JavaScript has no way to drain the
 * microtask queue from inside a call — and code under test should not rely
 * on a checkpoint between two timers due together anyway. A test that wants
 * one advances to the first timer, awaits, then advances again.
 */
export class ManualClock implements Clock {
  #now: number
  #seq = 0
  // The `chain` of the timer whose callback `advance` is running (an
  // `advance` inside it saves and restores it); undefined when none runs.
  #firing: number | undefined
  readonly #timers = new Map<object, PendingTimer>()
  // The same timers as a binary heap by due time, then creation: `advance`
  // took each next timer by a scan of them all, and 60,000 timers due in
  // one step (the deadlines of a load test on this clock) took 12–16 s. An
  // entry cleared, or replaced (`dueAt`), is no longer the one `#timers`
  // holds for its handle: skipped when it surfaces, and dropped all at once
  // when such entries outnumber the live ones (`#compact`), so a test that
  // makes and clears timers by the million keeps no more than it has live.
  #queue: PendingTimer[] = []

  constructor(startMs = 0) {
    // NaN (or a string) made every deadline on this clock throw "clock.now()
    // must return a number" at creation, far from the cause. A string is a
    // TypeError, NaN or Infinity a RangeError, as every option is refused.
    if (typeof startMs !== 'number' || !Number.isFinite(startMs)) {
      throw optionError('new ManualClock: startMs', 'a finite number of ms', startMs)
    }
    this.#now = startMs
  }

  now(): number {
    return this.#now
  }

  setTimeout(callback: () => void, ms: number): unknown {
    // Refused here, as Node's setTimeout does: else `advance` threw
    // "callback is not a function" later, from whatever test drove time.
    if (typeof callback !== 'function') {
      throw new TypeError(
        `ManualClock.setTimeout expects a function, got ${describeValue(callback)}`,
      )
    }
    return this.#schedule(callback, delayOf(ms))
  }

  /** Cancels a timer this clock made; any other handle (another clock's, a number) is ignored. */
  clearTimeout(handle: unknown): void {
    if (this.#timers.delete(handle as object)) this.#compact()
  }

  static {
    const ownWholeTimeout: typeof wholeTimeout = (clock, callback, ms, options) => {
      if (typeof clock !== 'object' || clock === null || !(#timers in clock)) return undefined
      if (options?.keepAlive === true && clock.setTimeout !== ManualClock.prototype.setTimeout) {
        return undefined
      }
      return clock.#schedule(callback, ms)
    }
    const ownFiresExactly: typeof firesExactly = (clock) =>
      typeof clock === 'object' && clock !== null && #timers in clock
    const ownDueAt: typeof dueAt = (clock, handle, at) => {
      if (typeof clock !== 'object' || clock === null || !(#timers in clock)) return
      const timer = clock.#timers.get(handle as object)
      if (timer !== undefined && timer.at > at && timer.at === clock.#now + (at - clock.#now)) {
        // A new entry, due earlier: moved in place, the heap would not know.
        clock.#enqueue({ ...timer, at })
      }
    }
    own = Object.freeze({
      wholeTimeout: ownWholeTimeout,
      firesExactly: ownFiresExactly,
      dueAt: ownDueAt,
    })
    Object.defineProperty(ManualClock.prototype, OPS, { value: own })
    wholeTimeout = (clock, callback, ms, options) =>
      ownFiresExactly(clock)
        ? ownWholeTimeout(clock, callback, ms, options)
        : foreignOps(clock)?.wholeTimeout(clock, callback, ms, options)
    firesExactly = (clock) =>
      ownFiresExactly(clock) || foreignOps(clock)?.firesExactly(clock) === true
    dueAt = (clock, handle, at) => {
      if (ownFiresExactly(clock)) ownDueAt(clock, handle, at)
      else foreignOps(clock)?.dueAt(clock, handle, at)
    }
  }

  #schedule(callback: () => void, ms: number): object {
    // An object of its own, which only this clock holds as a key: numbered per
    // clock, a handle from another clock (or a plain number) cancelled this
    // clock's timer of the same number.
    const handle = Object.freeze({})
    const chain = this.#firing === undefined || ms > 0 ? 0 : this.#firing + 1
    // Run in the async context it was set in, as Node's own timers run
    // theirs: fired in `advance()`'s caller's context, a deadline's onExpire
    // (an Express `respond`, a log line, an abort listener) saw the test's
    // context, or another request's, where production sees the request that
    // made the deadline. Every AsyncLocalStorage (OpenTelemetry's too). An
    // AsyncResource of its own, not `AsyncResource.bind` (~20–35 µs a timer:
    // it wraps two deprecation getters per call) nor `snapshot()` (as slow).
    const scope = new AsyncResource('ManualClockTimer')
    const inScope = () => scope.runInAsyncScope(callback)
    this.#enqueue({ handle, at: this.#now + ms, seq: ++this.#seq, callback: inScope, chain })
    return handle
  }

  /** Hold `timer` as its handle's (replacing any entry it had) and queue it. */
  #enqueue(timer: PendingTimer): void {
    this.#timers.set(timer.handle, timer)
    this.#queue.push(timer)
    siftUp(this.#queue, this.#queue.length - 1)
    this.#compact()
  }

  /** The live timer due first, stale entries above it dropped; undefined when none. */
  #first(): PendingTimer | undefined {
    const queue = this.#queue
    while (queue.length > 0) {
      const top = queue[0]!
      if (this.#timers.get(top.handle) === top) return top
      popTop(queue)
    }
    return undefined
  }

  /** Rebuilt from the live timers once stale entries outnumber them: memory stays in line with `pendingTimers`. */
  #compact(): void {
    if (this.#queue.length <= 2 * this.#timers.size + 32) return
    const queue = [...this.#timers.values()]
    for (let i = (queue.length >> 1) - 1; i >= 0; i--) siftDown(queue, i)
    this.#queue = queue
  }

  /** Timers scheduled and not yet fired or cleared — a leak check. */
  get pendingTimers(): number {
    return this.#timers.size
  }

  /**
   * Move time forward, firing due timers in order (including ones they
   * schedule). A callback that throws does not stop the step: the later
   * timers still run and the clock reaches `now + ms`, then the first error
   * is rethrown.
   */
  advance(ms: number): void {
    // A negative step ran the "monotonic" clock backwards; NaN (or Infinity)
    // left it reading NaN for good, and every deadline made on it after that.
    if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) {
      throw new RangeError(`advance expects a finite number of ms ≥ 0, got ${String(ms)}`)
    }
    const target = this.#now + ms
    // Each step finite, the sum not (Number.MAX_VALUE twice): the clock read
    // Infinity for good, every deadline made on it was born expired with
    // elapsed() NaN, and a wait on it never settled (Infinity − Infinity).
    if (!Number.isFinite(target)) {
      throw new RangeError(
        `advance(${String(ms)}) would take the clock past every finite time, from ${String(this.#now)}`,
      )
    }
    // A callback that throws does not stop the step: the timers due after it
    // still run and the clock still reaches `target`, then the first error is
    // rethrown — as vitest's fake timers (@sinonjs/fake-timers) do. Stopped
    // there, a deadline due later in the step stayed live and the clock short
    // of it. A flag, not the error: `throw undefined` is a throw too.
    let threw = false
    let firstError: unknown
    const outer = this.#firing
    try {
      for (;;) {
        const next = this.#first()
        if (next === undefined || next.at > target) break
        if (next.chain > IMMEDIATE_CHAIN_LIMIT) {
          // Left pending, the time where it stands: the test's code is at fault, not the step.
          // The first error a callback threw in the step, which `advance`
          // would have rethrown, rides along as the cause: it is often why
          // the poller never stops (its check threw before it could).
          throw new RangeError(
            `ManualClock.advance: a chain of ${IMMEDIATE_CHAIN_LIMIT} timers, each set with no delay by the one before, fired at ${String(this.#now)} ms without time moving (a callback that re-arms itself at once?); ` +
              `time never reaches ${String(target)} ms. Node waits 1 ms for each: give such a timer a delay` +
              (threw ? '; a callback threw earlier in the step (the cause)' : ''),
            threw ? { cause: firstError } : undefined,
          )
        }
        popTop(this.#queue)
        this.#timers.delete(next.handle)
        this.#now = Math.max(this.#now, next.at)
        this.#firing = next.chain
        try {
          next.callback()
        } catch (error) {
          if (!threw) {
            threw = true
            firstError = error
          }
        }
      }
    } finally {
      this.#firing = outer
    }
    // A timer's callback may itself advance past `target` (a test helper that
    // drives time from inside a callback): setting `target` then moved the
    // monotonic clock backwards.
    this.#now = Math.max(this.#now, target)
    if (threw) throw firstError
  }
}

/**
 * The delay a timer of `ms` waits on this clock, as `systemClock` would wait
 * it: a delay that is not a number > 0 (0, NaN, undefined, negative) is due
 * at once — `advance(0)` fires it — where Node fires it too, after its 1 ms
 * floor (not modelled: other packages' tests rely on `advance(0)`). A timer
 * at `now + NaN` was never due, and what it guarded hung in the test while it
 * fired in production. Past 2³¹−1 ms (Infinity included) it is cut to 2³¹−1
 * ms, as `systemClock` cuts it (Node's own timers would overflow to 1 ms).
 */
function delayOf(ms: unknown): number {
  const n = Number(ms)
  if (!(n > 0)) return 0
  return Math.min(n, MAX_TIMER_MS)
}

/** Whether timer `a` fires before `b`: by due time, then by creation. */
function before(a: PendingTimer, b: PendingTimer): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq)
}

function siftUp(heap: PendingTimer[], index: number): void {
  const item = heap[index]!
  let i = index
  while (i > 0) {
    const parent = (i - 1) >> 1
    if (!before(item, heap[parent]!)) break
    heap[i] = heap[parent]!
    i = parent
  }
  heap[i] = item
}

function siftDown(heap: PendingTimer[], index: number): void {
  const item = heap[index]!
  const n = heap.length
  let i = index
  for (;;) {
    let child = 2 * i + 1
    if (child >= n) break
    if (child + 1 < n && before(heap[child + 1]!, heap[child]!)) child++
    if (!before(heap[child]!, item)) break
    heap[i] = heap[child]!
    i = child
  }
  heap[i] = item
}

/** Remove the heap's first entry. */
function popTop(heap: PendingTimer[]): void {
  const last = heap.pop()
  if (last !== undefined && heap.length > 0) {
    heap[0] = last
    siftDown(heap, 0)
  }
}
