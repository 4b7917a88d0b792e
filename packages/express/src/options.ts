import {
  type Clock,
  type Deadline,
  type DeadlineExceededError,
  type DeadlineSource,
  INGRESS_MEANT_INSTEAD,
  type PlanEntry,
  type ResolvedIngressOptions,
  refuseUnknownOptions,
  resolveIngressOptions,
  SlicePlan,
} from '@hourglass/core'
import type { Request, Response } from 'express'
import type {
  IngressExpireMessage,
  IngressInvalidHeaderMessage,
  IngressLateWriteMessage,
} from './channels.js'

export interface DeadlineMiddlewareOptions {
  /** Budget for a request that carries no valid deadline header, in ms. Default 2000. Must be > 0. */
  defaultMs?: number | undefined
  /**
   * The most any request may have, in ms: an inbound value above it is cut to
   * it (a caller can shorten its request, never lengthen it). Default 30000,
   * or `defaultMs` when that is larger. Must be > 0.
   */
  maxMs?: number | undefined
  /**
   * Kept back for writing the 504, in ms; 0 = none. The handler's deadline
   * (`req.deadline`) ends this much before the caller's, and the plan keeps it
   * back again so a handler whose slices run to their limit can still answer
   * before the 504. Default: adaptive (core's `adaptiveReserveMs()`, read
   * per request) — the larger of twice the timer lateness this process sees
   * (the p99 of the event loop's delay over the last 1 s window, or of its
   * deadline timers' own lateness) and the p99 of how late its last 64
   * timeout answers were flushed plus that lateness, + 2 ms, bounded to
   * 10–100 ms, so the 504 reaches the caller by its deadline on a busy
   * machine too. On a clock without `realTime` (a `ManualClock`): 10 ms.
   */
  reserveMs?: number | undefined
  /**
   * Which inbound headers to believe. Default: all three
   * (`x-deadline-remaining-ms`, `grpc-timeout`, `x-envoy-expected-rq-timeout-ms`).
   * `[]` ignores every inbound deadline (an internet-facing edge that sets its own).
   */
  trust?: readonly DeadlineSource[] | undefined
  /**
   * Answer 400 with a JSON reason when a trusted deadline header is malformed.
   * Default false: use the default budget and report it. In observe mode it
   * reports only, as when false: dark mode changes no answer.
   */
  strict?: boolean | undefined
  /**
   * `enforce` (default): answer 504 and abort at the deadline. `observe` (dark
   * mode): compute and propagate everything, report each request that would
   * have been cut (`onExpire`, the event), but never answer 504 or abort.
   */
  mode?: 'enforce' | 'observe' | undefined
  /** Split every request's deadline into named slices (`req.plan`); see core's `Deadline.plan`. */
  plan?: Record<string, PlanEntry> | undefined
  /** Time source; inject a `ManualClock` (or a counting wrapper) in tests. Default: the system clock. */
  clock?: Clock | undefined
  /** A request ran out of time (answered 504, stream ended, or observed in dark mode). */
  onExpire?: ((event: IngressExpireMessage) => void) | undefined
  /** A trusted inbound deadline header was malformed. */
  onInvalidHeader?: ((event: IngressInvalidHeaderMessage) => void) | undefined
  /** The handler touched the response after the deadline answered for it; the call was swallowed. */
  onLateWrite?: ((event: IngressLateWriteMessage) => void) | undefined
  /**
   * Writes the answer to a request whose time ran out before its response
   * started (on arrival, or when the handler's deadline ends), in place of
   * the plain 504: an API's own error shape. It must end the response before
   * it returns (calling `end`, `json` or `send` is enough, also through a
   * middleware that completes the end later, within a second: past that the
   * response is destroyed); what it leaves unended — an
   * `async` one writing after an `await` too — gets the plain answer. A
   * response already started is ended (or cut) as without it. Called once per expired request, never on
   * the success path. `error` carries the request's figures, as the plain
   * 504's body does: `budgetMs` the request's budget (not the handler's,
   * `reserveMs` less), `elapsedMs` since arrival, `slice` the one running.
   */
  respond?: ((req: Request, res: Response, error: DeadlineExceededError) => void) | undefined
}

export interface ResolvedOptions extends ResolvedIngressOptions {
  plan: Record<string, PlanEntry> | undefined
  onExpire: DeadlineMiddlewareOptions['onExpire']
  onInvalidHeader: DeadlineMiddlewareOptions['onInvalidHeader']
  onLateWrite: DeadlineMiddlewareOptions['onLateWrite']
  respond: DeadlineMiddlewareOptions['respond']
}

const HOOKS = ['onExpire', 'onInvalidHeader', 'onLateWrite', 'respond'] as const

/** Every option `deadline()` reads; a `Record` so the compiler fails when the interface gains one this lacks. */
const OPTION_NAMES = Object.keys({
  defaultMs: true,
  maxMs: true,
  reserveMs: true,
  trust: true,
  strict: true,
  mode: true,
  plan: true,
  clock: true,
  onExpire: true,
  onInvalidHeader: true,
  onLateWrite: true,
  respond: true,
} satisfies Record<keyof DeadlineMiddlewareOptions, true>)

/**
 * Names a user reaches for to say which deadline headers to believe. The
 * option is `trust`, too many edits from these for a spelling guess: the
 * error listed every option and pointed at none (`{ trustHeader: false }`
 * on an internet-facing edge, where `trust: []` was meant).
 */
const MEANT_INSTEAD: ReadonlyMap<string, string> = new Map([
  ...INGRESS_MEANT_INSTEAD,
  ['trustHeader', 'trust'],
  ['trustHeaders', 'trust'],
  ['trustedHeaders', 'trust'],
  ['headers', 'trust'],
])

/** Validate once, when the middleware is created: a typo should fail at boot, not per request. */
export function resolveOptions(options: DeadlineMiddlewareOptions): ResolvedOptions {
  refuseUnknownOptions(options, OPTION_NAMES, 'deadline()', { meant: MEANT_INSTEAD })
  // Core's rule: with no `maxMs`, the cap follows a larger `defaultMs` up.
  const ingress = resolveIngressOptions(options)
  // A fixed reserve not under the budget, and a budget at the default
  // reserve's floor, are refused by core (resolveIngressOptions).
  // callHook would throw on the first request a non-function hook reports on
  // (rethrown on the next tick, taking the process down), not at boot.
  for (const name of HOOKS) {
    const hook: unknown = options[name]
    if (hook != null && typeof hook !== 'function') {
      throw new TypeError(`${name} must be a function, got ${typeof hook}`)
    }
  }
  // Slice plans validate their entries when built; build one now so a bad plan fails at boot.
  // On no deadline: the constructor checks the entries and only keeps the
  // deadline for calls this plan never gets. One made for it
  // (`Deadline.never()`) was published on `hourglass:deadline:create` as a
  // deadline of no request's, never ended: a subscriber counting
  // deadlines, or a tracer drawing them, saw a phantom for every
  // `deadline({ plan })` (core keeps its own `markForeignExpiry` sentinel
  // off that channel for the same reason).
  // Null and undefined are no plan; any other value is checked as one: `plan: 0`
  // or `plan: ''` (a config value that was meant to be a plan) read as none,
  // and every request ran without the slices the app was written for.
  if (options.plan != null) new SlicePlan(undefined as unknown as Deadline, options.plan)
  return {
    ...ingress,
    plan: options.plan ?? undefined,
    onExpire: options.onExpire,
    onInvalidHeader: options.onInvalidHeader,
    onLateWrite: options.onLateWrite,
    respond: options.respond,
  }
}
