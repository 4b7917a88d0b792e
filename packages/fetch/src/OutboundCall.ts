import type { AsyncResource } from 'node:async_hooks'
import {
  boundingDeadline,
  type Clock,
  type Deadline,
  isDeadlineExceeded,
  wait,
} from '@hourglass/core'
import { Attempt, type AttemptInit } from './Attempt.js'
import { dispatchEventUrl, dispatchUrl, publishRetry, publishRetrySkipped } from './channels.js'
import {
  CLOSED_DISPATCHER_POLL_MS,
  closedDispatcherError,
  saysWhenClosed,
} from './closedDispatcherError.js'
import { checkDeadline } from './deadlineOption.js'
import { decideRetry, type Outcome } from './decideRetry.js'
import { noBudgetError } from './noBudgetError.js'
import { clockFor, type PhaseLimits, type ResolvedOptions, type ResolvedRetry } from './options.js'

export interface OutboundCallInit {
  config: ResolvedOptions
  /**
   * This call's phase limits when they differ from `config`'s (undici's
   * per-request `headersTimeout` / `bodyTimeout` through the interceptor);
   * undefined = `config`'s.
   */
  readonly limits?: PhaseLimits | undefined
  deadline: Deadline | undefined
  /** The caller's signal, when it has one (createFetch's `init.signal`). */
  signal: AbortSignal | undefined
  method: string
  /** Origin and path, for events (no query); read only when an event is published. */
  readonly url: string
  /** The URL called, whole (createFetch): see `AttemptInit.target`. */
  target?(): string
  retry: ResolvedRetry | false
  /** Safe to send twice: idempotent method or an Idempotency-Key. Asked only when a retry is weighed. */
  repeatable: () => boolean
  /** The body can be sent again. */
  replayable: boolean
  /**
   * Told about every attempt as it is made (probe: it waits for the
   * attempt's end itself, which may come after the caller has the answer —
   * a 205 whose body undici still reads while fetch hands out none).
   */
  onAttempt?: ((attempt: Attempt) => void) | undefined
  /**
   * Where the call sits while it waits to retry, so its owner can end the
   * wait (createFetch's `close()`: a wait of up to `maxRetryAfterMs` outlived it).
   */
  readonly waiting?: RetryWaits | undefined
  /**
   * The caller's own dispatcher (createFetch's `dispatcher` option, a call's
   * `init.dispatcher`), whose `close()` / `destroy()` no `RetryWaits` hears:
   * looked at when a retry is weighed and during its wait (`closedDispatcherError`).
   */
  readonly theirDispatcher?: object | undefined
}

/**
 * The calls of one owner that wait to retry, which it can end at once and
 * for good (createFetch's `close()`): a call that comes to wait after that
 * is stopped as it begins.
 */
export class RetryWaits {
  readonly #calls = new Set<OutboundCall>()
  #reason: unknown

  /** Stop every call waiting now or later with `reason` (the first reason stays). */
  end(reason: unknown): void {
    this.#reason ??= reason
    for (const call of this.#calls) call.stop(this.#reason)
  }

  enter(call: OutboundCall): void {
    if (this.#reason !== undefined) call.stop(this.#reason)
    else this.#calls.add(call)
  }

  leave(call: OutboundCall): void {
    this.#calls.delete(call)
  }

  /** `end` was called: the owner is closed, and no retry of its calls can be sent. */
  get ended(): boolean {
    return this.#reason !== undefined
  }

  /** What `end` stopped the calls with (undici's ClientClosedError), or undefined. */
  get reason(): unknown {
    return this.#reason
  }
}

/**
 * An attempt's description, from its call's. A class with the URL as a
 * prototype getter (read only when an event is published): an object
 * literal with a getter is built by the runtime's slow path, on every
 * attempt.
 */
class CallAttemptInit implements AttemptInit {
  readonly deadline: Deadline | undefined
  readonly bound: Deadline | undefined
  readonly signal: AbortSignal | undefined
  readonly limits: PhaseLimits
  readonly clock: Clock
  readonly method: string
  readonly number: number
  readonly redirect: number | undefined
  /** Whoever reads the attempt's timings (probe) gets its body gaps measured too. */
  readonly measureGaps: boolean
  readonly retryReason: string | undefined
  readonly #call: OutboundCallInit
  readonly #hop: RedirectHop | undefined

  constructor(
    call: OutboundCallInit,
    number: number,
    hop: RedirectHop | undefined,
    retryReason: string | undefined,
    bound: Deadline | undefined,
  ) {
    this.#call = call
    this.bound = bound
    // A redirect hop is part of its attempt, not a retry of its own.
    this.retryReason = hop === undefined ? retryReason : undefined
    this.#hop = hop
    this.redirect = hop?.redirect
    this.deadline = call.deadline
    this.signal = call.signal
    this.limits = call.limits ?? call.config
    this.clock = clockFor(call.config, call.deadline?.clock)
    // A hop is sent with its own method: fetch turns a POST answered with
    // 301/302, and anything but GET/HEAD answered with 303, into a GET.
    this.method = hop === undefined ? call.method : hop.method
    this.number = number
    this.measureGaps = call.onAttempt !== undefined
  }

  get url(): string {
    const hop = this.#hop
    return hop === undefined ? this.#call.url : dispatchEventUrl(hop.origin, hop.path)
  }

  target(): string {
    const hop = this.#hop
    if (hop !== undefined) return dispatchUrl(hop.origin, hop.path)
    return this.#call.target?.() ?? this.#call.url
  }
}

/** A dispatch made to follow a redirect within an attempt (createFetch): which one, and where to. */
export interface RedirectHop {
  /** 1 for the first redirect's target. */
  redirect: number
  /** The dispatch's `origin` and `path`, read only when an event is published. */
  origin: unknown
  path: string
  /** The dispatch's method: not always the call's (a redirected POST may go on as a GET). */
  method: string
}

/** What `OutboundCall.drive` runs: one object per call, so the loop needs no closure per request. */
export interface CallDriver {
  /** Send attempt `number`; report its outcome with `call.settle(delayMs)`. */
  send(number: number): void
  /** The call ended before an answer: no budget, or the caller left. */
  end(error: unknown): void
}

/** What came of one send: hand the value to the caller, or retry after `delayMs`. */
export type SendResult<T> = { retry: true; delayMs: number } | { retry: false; value: T }

/**
 * One outbound call, from the first attempt to the answer, whichever way it
 * is sent — `createFetch` (undici's fetch) or `deadlineInterceptor` (undici's
 * dispatch). It owns the one retry loop of the package:
 *
 *   check (stopped? caller gone? budget left?) → send → judge the outcome on
 *   its evidence (`decideRetry`), announce the decision → wait (the one
 *   cancellable wait of core: ends at once when the deadline ends or the
 *   caller leaves) → check again → send.
 *
 * Nothing is sent after the caller left or the deadline ended, and nothing
 * waits after either: a pending retry ends at once.
 */
export class OutboundCall {
  readonly init: OutboundCallInit
  /** Retry rules already used once (made on the first retry decision: most calls never need it). */
  #used: Set<string> | undefined
  #stopped: unknown
  #wake: (() => void) | undefined
  #driver: CallDriver | undefined
  #number = 0
  /**
   * The reason of the retry announced last: named by the attempt that sends
   * it, or by the `retry-skipped` that says it was never sent.
   */
  #retryReason: string | undefined

  /**
   * The caller's async context, for a driver whose outcomes arrive in
   * undici's callbacks (the interceptor): those run in the context of
   * whoever opened the socket, so the retry decision, its events and the
   * next attempt are run in this one. createFetch's loop awaits in the
   * caller's own promise chain and needs none. Held here, not in the init
   * every attempt keeps: it holds the caller's context stores, which an
   * attempt outliving its request must not keep alive.
   */
  readonly #scope: AsyncResource | undefined

  /**
   * Under a budget on trial (an observe-only deadline, `parent.child(500,
   * { observe: true })`): the enforcing deadline above it, as the call
   * found it when it began. The whole call keeps it — every retry and
   * redirect hop, its refusal, its retry plan, its header and its waits: a
   * trial disposed while the call runs (`return fetch(url, { deadline:
   * trial })` from a `using` scope) no longer hears its parent, and read
   * again per attempt, a retry or hop after the dispose ran as under no
   * deadline — sent after the client left, never ended under a limit of 0.
   * Undefined otherwise (no lookup for an enforcing deadline): a call begun
   * after such a dispose runs as under no deadline, as core says.
   */
  readonly #bound: Deadline | undefined

  constructor(init: OutboundCallInit, scope?: AsyncResource) {
    this.#scope = scope
    checkDeadline(init.deadline)
    this.init = init
    const { deadline } = init
    this.#bound = deadline?.observe === true ? boundingDeadline(deadline) : undefined
  }

  /** The enforcing deadline the call began under, when its own is a budget on trial (see `#bound`). */
  get bound(): Deadline | undefined {
    return this.#bound
  }

  /**
   * The caller left (undici aborted our controller, the signal fired): a
   * pending retry wait ends now and no further attempt is sent. The first
   * reason wins.
   */
  stop(reason: unknown): void {
    if (this.#stopped !== undefined) return
    this.#stopped = reason ?? new DOMException('This operation was aborted', 'AbortError')
    this.#wake?.()
  }

  get stopped(): boolean {
    return this.#stopped !== undefined
  }

  /**
   * A new attempt of this call, bound to its deadline, signal and phase
   * limits; with `hop`, a dispatch that follows a redirect within attempt
   * `number` (its events name the hop's URL).
   */
  attempt(number: number, hop?: RedirectHop): Attempt {
    const reason = number > 1 ? this.#retryReason : undefined
    const attempt = new Attempt(new CallAttemptInit(this.init, number, hop, reason, this.#bound))
    const onAttempt = this.init.onAttempt
    if (onAttempt) onAttempt(attempt)
    return attempt
  }

  /**
   * Decide on an attempt's outcome and announce it: the wait before the next
   * attempt, or undefined when this outcome is the answer (or the failure).
   */
  judge(outcome: Outcome, number: number): number | undefined {
    // A plain answer below 400 is never retried and announces nothing: the hot path.
    if (outcome.error === undefined && outcome.status !== undefined && outcome.status < 400) {
      return undefined
    }
    const scope = this.#scope
    return scope === undefined
      ? this.#judge(outcome, number)
      : scope.runInAsyncScope(this.#judge, this, outcome, number)
  }

  #judge(outcome: Outcome, number: number): number | undefined {
    const { init } = this
    if (this.#used === undefined) this.#used = new Set()
    const decision = decideRetry(outcome, {
      retry: init.retry,
      get repeatable() {
        return init.repeatable()
      },
      replayable: init.replayable,
      used: this.#used,
      deadline: init.deadline,
      bound: this.#bound,
      minBudgetMs: init.config.minBudgetMs,
    })
    if (
      decision.retry &&
      (init.waiting?.ended === true ||
        (init.theirDispatcher !== undefined &&
          closedDispatcherError(init.theirDispatcher) !== undefined))
    ) {
      // Its owner was closed while this attempt was in flight (fetch.close(),
      // or the caller's own dispatcher closed: undici lets a request in
      // flight finish). A retry would go to the closed Agent and fail with
      // "The client is closed" — after its whole Retry-After, for the
      // caller's own, which nothing else tells us of: the caller lost
      // the answer it had (a 503) or the failure that says what happened (a
      // reset). Not retried: the attempt's own outcome is the call's, said
      // as a wait ended by close() is (`aborted`).
      publishRetrySkipped(() => ({
        deadline: init.deadline,
        method: init.method,
        url: init.url,
        attempt: number,
        reason: decision.reason,
        why: 'aborted',
      }))
      return undefined
    }
    if (!decision.retry) {
      // `retry: false` asked for no retry decisions: a skipped one is no news
      // (llm's adapters send so, and decide themselves: every 429 read as a
      // skipped retry beside llm's own retry in traces and metrics).
      if (decision.reason !== undefined && init.retry !== false) {
        publishRetrySkipped(() => ({
          deadline: init.deadline,
          method: init.method,
          url: init.url,
          attempt: number,
          reason: decision.reason,
          why: decision.why,
        }))
      }
      return undefined
    }
    this.#used.add(decision.rule)
    this.#retryReason = decision.reason
    publishRetry(() => ({
      deadline: init.deadline,
      method: init.method,
      url: init.url,
      attempt: number + 1,
      reason: decision.reason,
      delayMs: decision.delayMs,
    }))
    return decision.delayMs
  }

  /**
   * The one retry loop (see the class comment). `driver.send(number)` sends
   * attempt `number` and reports its outcome through `settle`: the wait
   * before the next attempt, or undefined when this outcome went to the
   * caller. `driver.end(error)` hears what ends the call before an answer (no
   * budget, the caller left). The common path — one attempt, no retry —
   * creates no promise and no closure: this runs on every request.
   */
  drive(driver: CallDriver): void {
    this.#driver = driver
    this.#step(1)
  }

  /** The outcome of the attempt in flight: retry after `delayMs`, or undefined = it was the answer. */
  settle(delayMs: number | undefined): void {
    if (delayMs === undefined) return
    const next = this.#number + 1
    const scope = this.#scope
    const step =
      scope === undefined
        ? () => this.#step(next)
        : () => scope.runInAsyncScope(this.#step, this, next)
    if (delayMs <= 0) {
      // Not from inside undici's callback for the attempt that just ended.
      queueMicrotask(step)
      return
    }
    const waiting = this.init.waiting
    if (waiting === undefined) {
      this.#pause(delayMs).then(step, (error: unknown) => this.#abandon(error))
      return
    }
    waiting.enter(this)
    this.#pause(delayMs).then(
      () => {
        waiting.leave(this)
        step()
      },
      (error: unknown) => {
        waiting.leave(this)
        this.#abandon(error)
      },
    )
  }

  /** The same loop for a promise-returning `send` (createFetch). */
  run<T>(send: (number: number) => Promise<SendResult<T>>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.drive({
        send: (number) => {
          send(number).then((result) => {
            if (result.retry) {
              this.settle(result.delayMs)
              return
            }
            // The loop is over: let go of the driver, whose `end` holds this
            // promise and with it the value. The attempt keeps this call
            // (its finish hooks) while its body is open, and a Response held
            // from there is one undici's fetch can never collect: it cancels
            // a body left unread only once its Response is garbage.
            this.#driver = undefined
            resolve(result.value)
          }, reject)
        },
        end: reject,
      })
    })
  }

  #step(number: number): void {
    const driver = this.#driver
    if (!driver) return
    // A retry on the caller's own dispatcher closed since (its wait ended
    // by its timer before a look saw the close) is not sent either.
    // Not `??`: a refusal may be a falsy abort reason (`abort(null)`), and
    // read as none it sent the call on an aborted signal.
    const theirs = number > 1 ? this.init.theirDispatcher : undefined
    let refused = this.#refusal()
    if (refused === undefined && theirs !== undefined) refused = closedDispatcherError(theirs)
    // fetch.close() since this retry was decided: a retry at once (a status
    // without Retry-After, a refused connect, an empty read) enters no wait
    // for close() to end, and went to the closed Agent — an `attempt` with
    // its retryReason announced for a retry never sent, the caller's 503
    // lost to undici's bare "The client is closed".
    if (refused === undefined && number > 1 && this.init.waiting?.ended === true) {
      refused = this.init.waiting.reason
    }
    if (refused !== undefined) {
      if (number > 1) this.#abandon(refused)
      else driver.end(refused)
      return
    }
    this.#number = number
    driver.send(number)
  }

  /**
   * The retry announced for the attempt before is never sent: the caller
   * left, the deadline ended or was cancelled, or close() was called during
   * its wait. Said so, as a `retry-skipped` for that attempt — else its
   * `retry` event stood alone, read (otel's counter) as a retry made.
   */
  #abandon(error: unknown): void {
    this.#skipAnnounced(this.#number, isDeadlineExceeded(error) ? 'no-budget' : 'aborted')
    this.#driver?.end(error)
  }

  /**
   * The retry of the attempt in flight (`number`) was refused as it was
   * handed to a dispatcher closed since the attempt before was sent (the
   * interceptor's: it cannot look at the Agent beneath it). The attempt
   * before is the call's outcome, said as a retry ended by close() is
   * (`aborted`).
   */
  retryRefused(number: number): void {
    this.#skipAnnounced(number - 1, 'aborted')
  }

  #skipAnnounced(attempt: number, why: 'no-budget' | 'aborted'): void {
    const { init } = this
    const reason = this.#retryReason
    if (reason === undefined) return
    publishRetrySkipped(() => ({
      deadline: init.deadline,
      method: init.method,
      url: init.url,
      attempt,
      reason,
      why,
    }))
  }

  /** What forbids another attempt — the caller left, or too little time is left — or undefined. */
  #refusal(): unknown {
    if (this.#stopped !== undefined) return this.#stopped
    const { signal, deadline, config } = this.init
    if (signal?.aborted) return signal.reason
    return noBudgetError(deadline, config.minBudgetMs, this.#bound)
  }

  async #pause(ms: number): Promise<void> {
    if (this.#stopped !== undefined) return // stopped before the wait began: the next step refuses
    const { deadline, signal, config } = this.init
    const bound = this.#bound
    const theirs = this.init.theirDispatcher
    const clock = clockFor(config, deadline?.clock)
    await wait(ms, {
      // An observe-only deadline too: wait ends on its cancel alone, never
      // on its observed expiry (its onDone hears no expiry).
      deadline,
      signal,
      clock,
      wakeOn: (wake) => {
        this.#wake = wake
        // A trial disposed since the call began no longer hears the bound
        // it began under: the bound's end wakes the wait, and the next step
        // refuses (`#refusal`). At its every end, not only once the trial
        // reads as unbounded: one disposed after its observed expiry still
        // reads as bounded by it (boundingDeadline walks past the spent
        // trial) yet no longer hears it, and its Retry-After wait ran on
        // after the client left. Beside a live trial's own cancel, a second
        // wake is harmless.
        const offBound = bound?.onDone(() => wake())
        // The caller's own dispatcher closed or destroyed during the wait
        // (a shutdown): it says so to no one, so it is looked at. Stopped
        // with undici's error, as fetch.close() stops a wait on our Agent;
        // the wait ran on for the rest of its Retry-After (up to a minute,
        // keeping the process up) to fail on the closed Agent then.
        // Only one that can say so (undici's Agent, Pool, Client, ProxyAgent,
        // composed or not): a MockAgent's wait had a timer more for nothing.
        // `over` too: a clock whose setTimeout gives no handle cannot clear
        // it, and the look went on re-arming after the call had ended.
        let poll: unknown
        let over = false
        const look = () => {
          if (over) return
          const closed = closedDispatcherError(theirs as object)
          if (closed === undefined) poll = clock.setTimeout(look, CLOSED_DISPATCHER_POLL_MS)
          else this.stop(closed)
        }
        if (theirs !== undefined && saysWhenClosed(theirs)) {
          poll = clock.setTimeout(look, CLOSED_DISPATCHER_POLL_MS)
        }
        return () => {
          over = true
          this.#wake = undefined
          offBound?.()
          if (poll !== undefined) clock.clearTimeout(poll)
        }
      },
    })
  }
}
