import { AsyncLocalStorage } from 'node:async_hooks'
import type { Deadline } from './Deadline.js'
import { describeValue } from './describeValue.js'
import { isDeadline } from './isDeadline.js'

/**
 * A named value carried by the context (the deadline is one; @hourglass/fetch
 * carries the attempt in flight in another). Create one per idea, at module
 * level, with `contextKey()`.
 */
export interface ContextKey<T> {
  readonly symbol: symbol
  /** Phantom: documents the value's type, costs nothing at run time. */
  readonly type?: T
}

export function contextKey<T>(name: string): ContextKey<T> {
  return { symbol: Symbol(name) }
}

/**
 * One run's slot: its key, its value, and the frame it runs in. Every frame
 * has the same shape (one hidden class, cheap to allocate per request). A
 * chain holds at most one frame per key (see `frame`), so a lookup walks at
 * most as many links as there are keys.
 */
interface Frame {
  readonly symbol: symbol
  readonly value: unknown
  readonly parent: Frame | undefined
}

// The ONE AsyncLocalStorage of Hourglass: on Node 20 every instance taxes
// every async resource of the process, so everything Hourglass carries rides
// in this one, as slots of a frame. Two installed copies of @hourglass/core
// would not see each other's context, so it is kept on a global symbol: every
// copy shares the first one created.
const KEY = Symbol.for('@hourglass/core.context')
const holder = globalThis as { [KEY]?: AsyncLocalStorage<Frame> }
holder[KEY] ??= new AsyncLocalStorage<Frame>()
const storage: AsyncLocalStorage<Frame> = holder[KEY]

const DEADLINE = Symbol.for('@hourglass/core.deadline')

/**
 * Run `fn` with `key` set to `value` for everything it starts; every other
 * slot is inherited from the frame it runs in.
 */
export function runWithContext<T, R>(key: ContextKey<T>, value: T, fn: () => R): R {
  refuseNonFunction('runWithContext', fn)
  return storage.run(frame(key.symbol, value), fn)
}

/** The value of `key` in the work in progress, or undefined outside any. */
export function readContext<T>(key: ContextKey<T>): T | undefined {
  return lookup(key.symbol) as T | undefined
}

/**
 * Run `fn` with `deadline` as the current deadline for everything it starts;
 * `undefined` (or `null`) hides the one it runs under: `currentDeadline()`
 * reads none inside (what the README tells `guard` users to do). Typed so:
 * typed `Deadline` alone, that documented call did not compile, and a
 * package had to write `undefined as unknown as Deadline`.
 */
export function runWithDeadline<T>(deadline: Deadline | null | undefined, fn: () => T): T {
  // Checked here, not where it is read: anything else became the current
  // deadline, and every `remainingMs()`, fetch and slice below failed with
  // "remaining is not a function", far from the call. By shape, not class:
  // a deadline of another installed copy of core is one too.
  if (deadline != null && !isDeadline(deadline)) {
    throw new TypeError(`runWithDeadline expects a Deadline, got ${describeValue(deadline)}`)
  }
  refuseNonFunction('runWithDeadline', fn)
  return storage.run(frame(DEADLINE, deadline ?? undefined), fn)
}

/** The deadline of the work in progress, or undefined outside any. */
export function currentDeadline(): Deadline | undefined {
  return lookup(DEADLINE) as Deadline | undefined
}

/** Milliseconds left on the current deadline; Infinity when there is none. */
export function remainingMs(): number {
  const deadline = currentDeadline()
  return deadline ? deadline.remaining() : Number.POSITIVE_INFINITY
}

/**
 * Run `fn` outside every Hourglass context: nothing it starts sees the
 * current deadline or any slot. For what outlives the work that happens to
 * create it — a keep-alive socket that later requests reuse, a process-wide
 * monitor: an async resource keeps the context it was made in for its whole
 * life, and with it the request (its body, its deadline) that opened it.
 */
export function runOutsideContext<R>(fn: () => R): R {
  refuseNonFunction('runOutsideContext', fn)
  return outside(fn)
}

/**
 * `fn` with no store. Already outside, it is simply called; inside, run
 * with the store unset — not `storage.exit`, which on Node 20 turns the
 * async hook off and on again (when this is the process's one enabled
 * AsyncLocalStorage: ~6 µs a call, against ~0.1 µs), and gRPC and fetch
 * step outside for every message and connection. `run` would also enable
 * the storage in a process that never used it, making every promise pay
 * for it: hence the first case.
 */
function outside<R>(fn: () => R): R {
  return storage.getStore() === undefined ? fn() : storage.run(undefined as never, fn)
}

/**
 * Everything Hourglass carries in the work in progress (every slot, or that
 * there is none), to run something in later with `runInContext`: for a
 * callback registered now and called from elsewhere — an emitter's listener
 * that its emitter calls from the connection's context, not the one it was
 * added in (see @hourglass/express's request events). Opaque.
 */
export type ContextSnapshot = { readonly __hourglassContext: never }

/**
 * The snapshot of no context at all (outside every run). On a global symbol,
 * as the storage is: one made per copy of core was no snapshot to another
 * copy's `runInContext`, which refused it as "not what captureContext()
 * returned" — where every other snapshot, a frame of the shared storage,
 * passes between copies.
 */
const OUTSIDE_KEY = Symbol.for('@hourglass/core.outsideContext')
const outsideHolder = globalThis as { [OUTSIDE_KEY]?: object }
outsideHolder[OUTSIDE_KEY] ??= Object.freeze({})
const OUTSIDE: object = outsideHolder[OUTSIDE_KEY]

/** What the work in progress carries, to run in later (`runInContext`). */
export function captureContext(): ContextSnapshot {
  return (storage.getStore() ?? OUTSIDE) as unknown as ContextSnapshot
}

/** Runs `fn` in what `captureContext()` captured, whatever it runs in now. */
export function runInContext<R>(snapshot: ContextSnapshot, fn: () => R): R {
  refuseNonFunction('runInContext', fn)
  const frame = snapshot as unknown
  if (frame === OUTSIDE) return outside(fn)
  // Anything else set as the store made every lookup walk a stranger's
  // `parent` links: refused, naming it.
  if (typeof frame !== 'object' || frame === null || !('symbol' in frame)) {
    throw new TypeError(
      `runInContext expects what captureContext() returned, got ${describeValue(snapshot)}`,
    )
  }
  return storage.run(frame as Frame, fn)
}

/**
 * The `fn` of a function that runs one, refused at the call naming both:
 * AsyncLocalStorage's own refusal ("Function.prototype.apply was called on
 * undefined", or "fn is not a function") named neither.
 */
export function refuseNonFunction(name: string, fn: unknown): void {
  if (typeof fn !== 'function') {
    throw new TypeError(`${name}: fn must be a function, got ${describeValue(fn)}`)
  }
}

/**
 * A frame for `symbol` on the current chain, minus the frame it shadows.
 * Linked to that frame, a frame kept every value it shadowed: a worker that
 * starts each job from inside the previous one's context (a setImmediate or
 * an emitter chain) kept every earlier job's deadline, and every slot lookup
 * walked all of them. The common cases cost nothing more than a walk of a
 * few links: no frame for `symbol` above (a request's first deadline), or it
 * is the top frame (a slice's deadline run inside the request's), whose
 * parent is linked instead; only frames between the top and the shadowed
 * one are copied.
 */
function frame(symbol: symbol, value: unknown): Frame {
  const top = storage.getStore()
  for (let f = top; f !== undefined; f = f.parent) {
    if (f.symbol === symbol) {
      return { symbol, value, parent: f === top ? f.parent : copyAbove(top as Frame, f) }
    }
  }
  return { symbol, value, parent: top }
}

/** The frames from `top` down to `shadowed`, copied onto what lies below `shadowed`. */
function copyAbove(top: Frame, shadowed: Frame): Frame {
  const below = top.parent as Frame // `shadowed` is further down
  return {
    symbol: top.symbol,
    value: top.value,
    parent: below === shadowed ? shadowed.parent : copyAbove(below, shadowed),
  }
}

function lookup(symbol: symbol): unknown {
  for (let frame = storage.getStore(); frame !== undefined; frame = frame.parent) {
    if (frame.symbol === symbol) return frame.value
  }
  return undefined
}
