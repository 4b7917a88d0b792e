import { EventEmitter } from 'node:events'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import {
  ClientClosedError,
  Deadline,
  DeadlineExceededError,
  type DeadlineSource,
  defaultReserveMs,
  firesExactly,
  type InvalidDeadlineHeader,
  isDeadlineExceeded,
  MAX_TIMER_MS,
  markExpiryOf,
  recordAnswerLateness,
  runningSlice,
  runWithDeadline,
  type SlicePlan,
} from '@hourglass/core'
import type { Request, Response } from 'express'
import { abortUploadOnClose } from './abortUploadOnClose.js'
import { bodyListenersInContext } from './bodyListenersInContext.js'
import { callHook } from './callHook.js'
import {
  expressChannels,
  type IngressEndMessage,
  type IngressExpireMessage,
  type IngressLateWriteMessage,
} from './channels.js'
import { clientLeft, serverCut } from './clientLeft.js'
import { closeIfOrphaned } from './closeIfOrphaned.js'
import { destroyIfEndStalls } from './destroyIfEndStalls.js'
import { dropBodyHeaders } from './dropBodyHeaders.js'
import { dropCutUpload } from './dropCutUpload.js'
import { dropHeadBody } from './dropHeadBody.js'
import { fromItsTurn } from './fromItsTurn.js'
import { interimHeadsFirst } from './interimHeadsFirst.js'
import { isHttp2 } from './isHttp2.js'
import { markNoRetry } from './markNoRetry.js'
import { nodeAnswered } from './nodeAnswered.js'
import type { ResolvedOptions } from './options.js'
import { responseProgress } from './responseProgress.js'
import { shieldSocket } from './shieldSocket.js'
import { stopPipedSources, swallowLateWrites } from './swallowLateWrites.js'
import { RESPOND_END_GRACE_MS, watchEnd } from './watchEnd.js'
import { type MiddlewareEnd, watchMiddlewareEnd } from './watchMiddlewareEnd.js'
import { writeContinueAhead } from './writeContinueAhead.js'
import { discardUnsentHead, headUnsent, queued, writeExpired } from './writeExpired.js'
import { writeInvalid } from './writeInvalid.js'

// Touch Express's req and res as little as possible. Express 5 sets every
// request's prototype (Object.setPrototypeOf per request), and on Node 20
// that leaves each req and res with a hidden class of its own: every
// property read, method lookup or new property on them misses V8's inline
// caches and takes the runtime's slow path (in a server profile, the one
// read of a symbol on req took 0.5 µs). So:
// - one new property on req, the public `req.deadline`; the IngressRequest
//   is found from that deadline, or up the parents of one a handler put in
//   its place (a symbol on our own Deadline, whose hidden class every
//   request's deadline shares); a second, an own `emit`, only on a request
//   with an upload, whose events come from the connection (see
//   `bodyListenersInContext`);
// - the response's listeners are added and removed with EventEmitter's own
//   methods rather than looked up on `res` each time (libraries that patch
//   `res.on` do it for 'drain' or 'data', not 'finish' or 'close').
// Not a WeakMap either: an entry per request makes every GC walk an
// ephemeron table of short-lived keys.
// `Symbol.for`, as core's markers: two installed copies of this package
// (an app's, and the one a library's router mounts `deadline()` from) must
// see each other's requests. With a symbol of its own, the inner copy did
// not: it put a deadline of its own budget in `req.deadline` — the work went
// on past the outer one's 504, its signal never aborted — and the request
// was announced and ended twice. Versioned: an incompatible IngressRequest
// takes a new key (only its public members are used across copies).
const INGRESS = Symbol.for('@hourglass/express.ingress.v1')
const { on, once, prependListener, removeListener } = EventEmitter.prototype

type Tagged = { [INGRESS]?: IngressRequest; parent?: unknown }

// Set by `#onDeadlineExpire` when a deadline expires inside `Deadline.after`,
// read right after it returns (synchronous: no other request in between).
let expiredInAfter = false

/**
 * One request's life under its deadline: arrival, the chain running inside
 * it, the 504 (or the observation) when it runs out, the client leaving, and
 * the release of every timer and listener when the response is over.
 *
 * `deadline` is the handler's: it ends `reserveMs` before the caller's, which
 * is the moment the 504 must be written. It is one core `Deadline` with one
 * timer, so its signal aborts exactly when the 504 goes out and the
 * `x-deadline-remaining-ms` it propagates downstream already leaves us the
 * time to answer.
 */
export class IngressRequest {
  /** The `IngressRequest` of a request that went through `deadline()`, if any. */
  static of(req: object): IngressRequest | undefined {
    // Our deadline, or one a handler put in its place under it
    // (`req.deadline = req.deadline.child(…)`): walk up to ours.
    let deadline = (req as { deadline?: unknown }).deadline as Tagged | null | undefined
    while (typeof deadline === 'object' && deadline !== null) {
      const ingress = deadline[INGRESS]
      if (ingress !== undefined) return ingress.req === req ? ingress : undefined
      deadline = deadline.parent as Tagged | undefined
    }
    return undefined
  }

  readonly req: IncomingMessage
  readonly res: ServerResponse
  readonly deadline: Deadline
  readonly plan: SlicePlan | undefined
  /** The request's budget (inbound or default, clamped), in ms; the handler gets `reserveMs` less. */
  readonly budgetMs: number
  /**
   * The budget is the caller's: a trusted header's, not cut by `maxMs` (nor
   * `defaultMs`, for a request that sent none). Only then does the answer
   * at its end say the caller's budget is gone (see `markNoRetry`).
   */
  readonly callersBudget: boolean
  readonly #options: ResolvedOptions
  #expiredOnArrival = false
  /** Made only when 'finish' is listened to (see `start`): removed in `#finish`. */
  #onFinish: (() => void) | undefined
  #answered = false
  #outcome: IngressEndMessage['outcome'] = 'ok'
  /** For outcome `error`: what the response was destroyed with, or the server's cut (see `serverCut`). */
  #error: unknown
  /** The server cut the response without an error (see `cut`). */
  #cut = false
  #finished = false
  /** Our timer found the handler's answer ended and queued behind a pipelined one (see `#expire`). */
  #queuedAtExpiry = false
  /** Dark mode reported the request's expiry when its time ran out (action `observed`: see `answerObserved`). */
  #observed = false
  /** Set when our own timer's 504 is written: when it was due (system clock), to time its flush. */
  #timedOutAt: number | undefined
  /** Armed when respond's `end`, or a started stream's end, has not finished yet (see `#boundDeferredEnd`); cleared in `#finish`. */
  #endGrace: TimerLink | undefined
  /** Forgets the wait of such an end for its pipelined turn (see `#boundUnfinishedEnd`); called in `#finish`. */
  #forgetTurn: (() => void) | undefined
  /** The timer of the 504 still due after the handler cancelled its deadline (see `#onDeadlineCancel`). */
  #stillDue: TimerLink | undefined
  /** What the socket had been given when the request arrived, if it had one (see `wholeBodyGiven`). */
  #givenBefore: number | undefined
  /** The handler's calls to an `end` a middleware ahead of us replaced (see `watchMiddlewareEnd`). */
  #middlewareEnd: MiddlewareEnd | undefined

  constructor(
    req: IncomingMessage,
    res: ServerResponse,
    options: ResolvedOptions,
    budgetMs: number,
    callersBudget: boolean,
  ) {
    this.req = req
    this.res = res
    this.budgetMs = budgetMs
    this.callersBudget = callersBudget
    this.#options = options
    // Adaptive on the real clock; the floor on a ManualClock (core's rule).
    const reserveMs = options.reserveMs ?? defaultReserveMs(options.clock)
    expiredInAfter = false
    this.deadline = Deadline.after(budgetMs - reserveMs, {
      clock: options.clock,
      observe: options.observe,
      onExpire: IngressRequest.#onDeadlineExpire,
      onCancel: IngressRequest.#onDeadlineCancel,
    })
    this.#expiredOnArrival = expiredInAfter
    this.plan = options.plan ? this.deadline.plan(options.plan, { reserveMs }) : undefined
    ;(this.deadline as Tagged)[INGRESS] = this
    ;(req as { deadline?: Deadline }).deadline = this.deadline
  }

  // One function for every request's deadline, not a closure per request:
  // the deadline it is called with leads to its request.
  static readonly #onDeadlineExpire = (deadline: Deadline): void => {
    const ingress = (deadline as Tagged)[INGRESS]
    // An empty budget expires inside Deadline.after, before the deadline is
    // tagged and anything is wired up: `start` answers for it.
    if (ingress === undefined) expiredInAfter = true
    else ingress.#expire('handler')
  }

  /**
   * `req.deadline` was cancelled, which released its timer: by the handler
   * (an upstream failed, a user pressed stop) or by us. A handler that then
   * never answered left its caller waiting for good, no 504: the 504 is
   * still due at the deadline, from a timer of ours that the response's end
   * (`#finish`) clears. Not for our own cancels (the 504, the client gone,
   * the server's cut: answered, or the outcome set first), nor for a
   * response already ended or started: a stream keeps the fate it had, the
   * handler's to end (a head stored by `writeHead()` and not sent is no
   * start: at the deadline the 504 replaces it, as `#answer` does). One
   * function for every request, as `#onDeadlineExpire`. A disposed deadline
   * gets nothing at its time: the handler opted out of it.
   */
  static readonly #onDeadlineCancel = (deadline: Deadline): void => {
    const ingress = (deadline as Tagged)[INGRESS]
    if (ingress === undefined || ingress.#stillDue !== undefined || ingress.#answered) return
    if (ingress.#finished || ingress.#outcome !== 'ok') return
    const res = ingress.res
    if (ingress.#ended() || (res.headersSent && !headUnsent(res))) return
    ingress.#armStillDue()
  }

  #armStillDue(): void {
    const clock = this.deadline.clock
    const delay = this.deadline.expiresAt - clock.now()
    if (!Number.isFinite(delay)) return
    const link: TimerLink = { ingress: this, destroy: undefined, handle: undefined }
    this.#stillDue = link
    // The handler may still opt out of the expiry, as the README says
    // disposing does: cancelled, the deadline ignores a dispose (nothing
    // is left to release), so the 504 still due must hear of it itself.
    // Its own `dispose`, on this rare path only: no hook on every deadline.
    if (!Object.hasOwn(this.deadline, 'dispose')) {
      Object.defineProperty(this.deadline, 'dispose', {
        value: IngressRequest.#disposeLiftsStillDue,
        writable: true,
        configurable: true,
        enumerable: false,
      })
    }
    // Whole ms (Node truncates fractions), at least 0: cancelled past its
    // time before its timer ran (a busy loop), it is answered at once. The
    // very time on a ManualClock, whose timers fire when asked (as core's
    // own do): rounded up, a handler that cancelled at 0.5 ms had its 504
    // only once a test advanced half a ms past the deadline.
    // Asked by shape, not `instanceof`: the app's ManualClock may be of
    // another installed copy of core than this package's.
    const ms = firesExactly(clock) ? delay : Math.ceil(delay)
    link.handle = clock.setTimeout(
      () => IngressRequest.#stillDueFired(link),
      Math.min(Math.max(0, ms), MAX_TIMER_MS),
    )
  }

  /**
   * `dispose` of a deadline the handler cancelled before answering (see
   * `#armStillDue`): disposed, it opts out of its expiry, so the 504 still
   * due goes — a stream started after it (SSE) was ended at the deadline,
   * a late answer replaced by the 504. One function for every request.
   */
  static readonly #disposeLiftsStillDue = function (this: Deadline): void {
    Deadline.prototype.dispose.call(this)
    const ingress = (this as Tagged)[INGRESS]
    if (ingress !== undefined) ingress.#clearStillDue()
  }

  /** Clears the 504 still due and puts the deadline's own `dispose` back (see `#armStillDue`). */
  #clearStillDue(): void {
    if (this.#stillDue !== undefined) {
      this.deadline.clock.clearTimeout(unlink(this.#stillDue))
      this.#stillDue = undefined
    }
    // Ours only: a `dispose` the handler set on its deadline itself stays.
    if (
      Object.getOwnPropertyDescriptor(this.deadline, 'dispose')?.value ===
      IngressRequest.#disposeLiftsStillDue
    ) {
      delete (this.deadline as { dispose?: unknown }).dispose
    }
  }

  static #stillDueFired(link: TimerLink): void {
    const ingress = link.ingress
    // Cleared, by a clock that could not cancel it (see `TimerLink`).
    if (ingress === undefined) return
    link.ingress = undefined
    ingress.#stillDue = undefined
    // libuv may fire a timer up to ~1 ms early: never answer before the
    // deadline (a 504 before its time, a negative lateness): wait the rest.
    if (ingress.deadline.expiresAt > ingress.deadline.clock.now()) ingress.#armStillDue()
    else {
      ingress.#clearStillDue()
      ingress.#expire('handler')
    }
  }

  /**
   * The handler has ended its response: Node's `end` was called, or the
   * `end` of a middleware ahead of us that completes it later (compression
   * flushing zlib to a slow reader: see `watchMiddlewareEnd`). Either way
   * the answer is whole and on its way: not the deadline's to end or cut.
   */
  #ended(): boolean {
    return this.res.writableEnded || this.#middlewareEnd?.called === true
  }

  /** True once the deadline answered (504 written, or a started response ended). */
  get answered(): boolean {
    return this.#answered
  }

  /**
   * True once the server cut the response without an error before it ended
   * (`res.destroy()`, `closeAllConnections()`, a server timeout: outcome
   * `error`, the deadline cancelled with that cut).
   */
  get cut(): boolean {
    return this.#cut
  }

  /** True once the response is over (finished, or closed before it ended) and its end published. */
  get over(): boolean {
    return this.#finished
  }

  /** True once the client left before the response ended (outcome `client-closed`). */
  get clientClosed(): boolean {
    return this.#outcome === 'client-closed'
  }

  /** What the socket had been given when this response got it (see `wholeBodyGiven`). */
  get givenBefore(): number | undefined {
    return this.#givenBefore
  }

  /** True in dark mode: expiry is reported, never enforced. */
  get observe(): boolean {
    return this.#options.observe
  }

  /** Announce the request, then run the rest of the chain inside its deadline. */
  start(source: DeadlineSource | 'default', clamped: boolean, next: () => void): void {
    this.#announce(source, clamped, false)
    // 'close' is enough to see every end: Node emits it after 'finish' on
    // every response (HTTP/2's compat API too), and alone for one that ended
    // early. 'finish' as well only when somebody listens to the end event:
    // then the end is announced the moment the response is handed to the OS,
    // before the tracing that listens to 'finish' ends the request's span
    // ('close' comes a tick later). Express leaves each response a hidden
    // class of its own, so every listener added and removed takes V8's slow
    // path: a second one is not paid for nobody. Our own 504 adds it too (see `#expire`). `on`,
    // not `once`: #finish removes them, and `once` would allocate a wrapper
    // per listener per request.
    if (expressChannels.end.hasSubscribers) this.#listenFinish()
    // Prepended: a caller that leaves is announced before the listeners added
    // ahead of us (instrumentation-http ends the request's span on this
    // 'close'), so tracing sees the departure on a span that is still open.
    prependListener.call(this.res, 'close', this.#onClose)
    this.#middlewareEnd = watchMiddlewareEnd(this.res)
    // Pipelined behind an answer still being written: Node tells only that
    // answer when the connection dies (see closeIfOrphaned).
    const socket = this.res.socket
    if (socket === null) {
      closeIfOrphaned(this.req, this.res)
      // Its socket comes when the answers ahead are done, before Node
      // flushes what it buffered meanwhile: counted from there, and put in
      // the order it goes out in (see interimHeadsFirst).
      once.call(this.res, 'socket', (given: Socket) => {
        this.#givenBefore = given.bytesWritten
        interimHeadsFirst(this.res)
      })
    } else if (socket !== undefined && !(this.req.httpVersionMajor >= 2)) {
      // Not on HTTP/2's compat response: no socket of its own to count (its
      // `socket` is the session's, or undefined once the stream closed: read,
      // it threw a TypeError out of deadline() for a client that had left).
      // Nor on a response with no socket at all (a test double's: the same
      // TypeError, for every request).
      this.#givenBefore = socket.bytesWritten
    }
    // A middleware ahead of us awaited something while the client left: the
    // response's 'close' has already fired and will not come again. Without
    // this the handler would run its whole budget for nobody. It runs as if
    // the client had left a moment later, with its deadline cancelled; one
    // that arrived expired is not run (nobody to send its 504 to). HTTP/2's
    // compat response has no `destroyed`: its stream's tells (read as
    // `undefined`, the handler ran its budget for nobody).
    if (this.#responseGone()) {
      this.#onClose()
      if (this.#expiredOnArrival) return
    } else if (this.#expiredOnArrival) {
      this.#expire('arrival')
      // Answered, or its client turned out to be gone (see `#expire`): not run.
      if (this.#answered || this.#finished) return
    }
    continueUpload(this.req, this.res)
    // The body's events come from the connection, outside the chain's context.
    bodyListenersInContext(this.req)
    runWithDeadline(this.deadline, next)
  }

  /**
   * `strict`: a malformed deadline header is the caller's bug. The request is
   * announced and ended like any other — a tracer that saw nothing of it
   * could not show why it failed — around a 400 naming the header, and its
   * timer is released at once: no listener is added, the chain never runs.
   */
  refuse(
    source: DeadlineSource | 'default',
    clamped: boolean,
    invalid: readonly InvalidDeadlineHeader[],
  ): void {
    this.#announce(source, clamped, true)
    // The client left while a middleware ahead of us was working: nobody is
    // there to read the 400. Ended as `start` ends a request whose client
    // left first (one that arrived expired too): `client-closed`, with its
    // event. The malformed header was reported all the same (invalid-header).
    // So is one whose FIN has ended the socket, its response's 'close' a
    // loop turn away (see `#connectionGone`): a 400 to nobody, `refused`.
    if (this.#responseGone() || this.#connectionGone()) {
      this.#onClose()
      return
    }
    this.#outcome = 'refused'
    try {
      // Throws when a middleware ahead already sent headers (Express passes
      // that on as an error): the deadline is released all the same.
      writeInvalid(this.res, this.req.method, invalid)
      // Its `end` reached a middleware that completes it later
      // (express-session saving to its store) and has not: bounded as the
      // 504 is, from its turn, on a system timer (the deadline is released
      // just below, and with it what would forget the wait: a response
      // over before its turn never gets it). A store that never answered
      // held the 400 for good.
      fromItsTurn(this.res, () => destroyIfEndStalls(this.res))
    } finally {
      // Now, not on 'finish': the end event reaches the server span while
      // instrumentation-http still has it open, and nothing waits on the socket.
      this.#finish()
    }
  }

  #announce(source: DeadlineSource | 'default', clamped: boolean, refused: boolean): void {
    if (!expressChannels.start.hasSubscribers) return
    expressChannels.start.publish(() => ({
      deadline: this.deadline,
      req: this.req,
      budgetMs: this.budgetMs,
      source,
      clamped,
      mode: this.#options.observe ? 'observe' : 'enforce',
      refused,
    }))
  }

  /**
   * Answer for the request because its time ran out: the middleware's own
   * timer, or `deadlineErrors()` given a `DeadlineExceededError` (a slice ran
   * out first). Reports it; in observe mode reports only.
   */
  expire(stage: IngressExpireMessage['stage'], slice?: string): void {
    this.#expire(stage, slice)
  }

  /**
   * The app answered for the request itself because its time ran out (its
   * own 504, a stream's error event, a connection it cut): recorded as an
   * expiry of ours is — outcome `expired`, the `expire` event (action `app`)
   * and `onExpire` — and the request's deadline is cancelled with its
   * `DeadlineExceededError` (the answer is out: nothing left runs for
   * anybody; in observe mode too, since the app enforced it). Nothing is
   * written and no writer is wrapped: the app's answer is still going out.
   * False, doing nothing, once we answered or the response is over (its end
   * already published).
   */
  reportExpired(slice = this.#runningSlice()): boolean {
    if (this.#answered || this.#finished) return false
    this.#answered = true
    this.#outcome = 'expired'
    const elapsedMs = this.deadline.elapsed()
    // A no-op on a deadline that already aborted (expired, or a child's
    // expiry cancelled it); one whose expiry was only observed has no reason yet.
    const reason = isDeadlineExceeded(this.deadline.reason)
      ? this.deadline.reason
      : new DeadlineExceededError({ budgetMs: this.budgetMs, elapsedMs, slice })
    this.deadline.cancel(reason)
    this.#publishExpire('handler', 'app', slice, elapsedMs)
    return true
  }

  /**
   * `deadlineErrors()` answering, in observe mode, a `DeadlineExceededError`
   * of the request's line (a downstream's 504 relayed, a client's refusal
   * for lack of budget): that error is real, and `write` (its 504, or the
   * end of a started stream) goes out in dark mode too. Recorded as enforce
   * mode records the same answer — outcome `expired`, the `expire` event
   * with what was done, `onExpire` — where it ended `ok` with statusCode
   * 504 and no event: dark mode's numbers missed every 504 that really went
   * out. Once it is out, the request's deadline is cancelled with its
   * `DeadlineExceededError`, as `reportExpired` does in dark mode too (the
   * app enforced it): whatever still runs is for an answer already given.
   * Left running, it held the request's server span (otel waits for the
   * work of a request that did not end `ok`, taking it for cancelled) until
   * it ended on its own: 600 ms past a 63 ms answer. An expiry dark mode
   * already reported when the request's own time ran out (`observed`) is
   * not reported again: one request, one expiry, as in enforce mode, whose
   * 504 went out then and swallows the later error (it was counted twice).
   * As `#expire`, a client already gone gets nothing and ends
   * `client-closed`, a response the handler had completed is no expiry.
   * Undefined when nothing was written.
   */
  answerObserved(write: () => '504' | 'ended', slice?: string): '504' | 'ended' | undefined {
    if (this.#connectionGone()) {
      this.#onClose()
      return undefined
    }
    const endedBefore = this.res.writableEnded
    const action = write()
    if (!endedBefore && !this.#answered && !this.#finished) {
      this.#answered = true
      this.#outcome = 'expired'
      const elapsedMs = this.deadline.elapsed()
      const running = slice ?? this.#runningSlice()
      // A no-op on a deadline that already aborted; an observed expiry left none.
      const reason = isDeadlineExceeded(this.deadline.reason)
        ? this.deadline.reason
        : new DeadlineExceededError({ budgetMs: this.budgetMs, elapsedMs, slice: running })
      this.deadline.cancel(reason)
      if (!this.#observed) this.#publishExpire('handler', action, running, elapsedMs)
    }
    return action
  }

  #expire(stage: IngressExpireMessage['stage'], slice = this.#runningSlice()): void {
    // Already answered (by us), or the handler's own response is flushing,
    // or the response is over (its end published: the client left, the
    // server cut it). A deadline error that reaches deadlineErrors() after
    // the client left (a downstream's, a slice of the app's own) found a
    // destroyed response: it wrote a 504 to nobody and published `expire`
    // (action '504') and called onExpire after the request had ended
    // `client-closed`, counting it twice.
    if (this.#answered || this.#finished) return
    if (this.#ended()) {
      // Ended through an `end` a middleware ahead completes later: the
      // handler's answer, kept while it moves, cut once it stalls.
      if (!this.res.writableEnded && this.#endGrace === undefined && !this.#options.observe) {
        this.#watchMiddlewareEnd(slice)
      } else if (this.res.writableEnded && queued(this.res)) {
        // The handler's answer, ended in time, queued behind another
        // pipelined answer on its connection: not a byte of it has left.
        // Judged at its end as one this timer did not reach (`#finish`).
        this.#queuedAtExpiry = true
      }
      return
    }
    // The client already left, and its response's 'close' is on its way:
    // its FIN reached Node, which ended the socket (the response's 'close'
    // comes about a loop turn later), or its reset destroyed it. Answered
    // here, a 504 went to nobody and the request ended `expired` (action
    // '504', onExpire) where the caller had left first: ended as that
    // 'close' would end it (`client-closed`, its event; the deadline
    // cancelled with ClientClosedError unless its own timer, this expiry,
    // already aborted it), in every mode.
    if (this.#connectionGone()) {
      this.#onClose()
      return
    }
    const elapsedMs = this.deadline.elapsed()
    let action: IngressExpireMessage['action'] = 'observed'
    if (!this.#options.observe) {
      this.#answered = true
      this.#outcome = 'expired'
      // The timer's expiry already carries its reason; a slice that ran out
      // first (via deadlineErrors) leaves the request's deadline live, and
      // a handler's cancel (the 504 still due) left its own reason: late
      // writes hear of the deadline, not of the handler's stop.
      const reason = isDeadlineExceeded(this.deadline.reason)
        ? this.deadline.reason
        : new DeadlineExceededError({ budgetMs: this.budgetMs, elapsedMs, slice })
      // The answer's flush is timed from 'finish' (see `#finishEvent`).
      this.#listenFinish()
      action = this.#answer(reason, elapsedMs, slice)
      // Our timer's 504: how late it leaves feeds the adaptive reserve. Not
      // one queued behind another pipelined response on its connection (no
      // socket yet): it leaves when that one is done, a wait no reserve can
      // cover and no sign of a late timer (whose own lateness Deadline
      // samples). Counted, three such 504s behind a 1 s answer held the
      // reserve at its ceiling for a minute: short budgets got 504 on arrival.
      // Nor a 504 for a slice that ran out (deadlineErrors(), the request's
      // time not up): written before the deadline, it was sampled as 0 ms
      // late, and with a plan 64 of them evicted every real sample — a
      // reserve learned at 95 ms fell back to its floor.
      if (
        action === '504' &&
        stage === 'handler' &&
        this.deadline.expired &&
        this.deadline.clock.realTime === true &&
        !queued(this.res)
      ) {
        this.#timedOutAt = this.deadline.expiresAt
      }
      // Whatever the handler still does must not reach the wire or the socket.
      swallowLateWrites(this.res, reason, (method) => this.#reportLateWrite(method))
      dropCutUpload(this.req)
      abortUploadOnClose(this.req)
      shieldSocket(this.req)
      this.deadline.cancel(reason)
    } else this.#observed = true
    this.#publishExpire(stage, action, slice, elapsedMs)
  }

  /**
   * The response is over (its 'close' has fired or is due): destroyed, or,
   * on HTTP/2's compat API, which has no `destroyed`, its stream is. The
   * HTTP version first: an HTTP/1 response has no `stream` to look up.
   */
  #responseGone(): boolean {
    if (this.res.destroyed) return true
    return this.req.httpVersionMajor >= 2 && http2Stream(this.res)?.destroyed === true
  }

  /**
   * The connection cannot carry this response any more: destroyed, or
   * ended by Node after the client's FIN (a server that does not allow
   * half-open connections, the default, ends the socket then). A
   * half-open socket still writable (`httpAllowHalfOpen`) can: not gone.
   * HTTP/2's `req.socket` is the whole session's: never judged here.
   */
  #connectionGone(): boolean {
    if (this.req.httpVersionMajor >= 2) return false
    const socket = this.req.socket as { destroyed?: boolean; writable?: boolean } | null
    if (socket === null || socket === undefined) return false
    return socket.destroyed === true || socket.writable === false
  }

  /**
   * The 504 — the app's (`respond`) when it gave one and the response has
   * not started — or the end of a started response. A `respond` that throws
   * has its error rethrown on the next tick, as a hook's; whatever it left
   * unended gets the plain answer, so the request is answered all the same.
   */
  #answer(reason: unknown, elapsedMs: number, slice: string | undefined): '504' | 'ended' {
    const respond = this.#options.respond
    // A head stored by writeHead() and not sent yet is no started response: respond answers it.
    if (
      respond !== undefined &&
      (!this.res.headersSent || discardUnsentHead(this.res, this.req.method))
    ) {
      // What the handler set with setHeader() for its own body would label
      // respond's: its JSON typed `text/event-stream` (res.json keeps a type
      // already set), labelled gzip, saved as a download. The plain 504
      // drops them; so does a head discarded above.
      dropBodyHeaders(this.res, true)
      // So does a reason phrase it assigned for that answer
      // (`res.statusMessage = 'Created'` before its work): Node keeps one
      // already set, and respond's `res.status(504)` went out `504 Created`.
      // Unset, Node writes the phrase of whatever status respond sets. HTTP/2
      // has none (and warns on any use of it).
      if (!isHttp2(this.res)) this.res.statusMessage = undefined as unknown as string
      // The wire's word that this answer is the deadline's, whatever its
      // shape: a caller seeing it does not retry (its budget is gone too).
      // Without it a caller retrying 504s sent the spent request again
      // (the SDKs read `x-should-retry`: markNoRetry sets both; only the
      // latter for a cap of this server's own, see `callersBudget`).
      // Set first: respond may still change it.
      markNoRetry(this.res, this.callersBudget)
      const error = isDeadlineExceeded(reason)
        ? asRequestExpiry(reason, this.budgetMs, elapsedMs, slice, this.deadline)
        : new DeadlineExceededError({ budgetMs: this.budgetMs, elapsedMs, slice })
      const ending = watchEnd(this.res)
      const putBack = this.req.method === 'HEAD' ? dropHeadBody(this.res) : undefined
      try {
        respond(this.req as Request, this.res as Response, error)
      } catch (thrown) {
        process.nextTick(() => {
          throw thrown
        })
      } finally {
        putBack?.()
        ending.stop()
      }
      if (this.res.writableEnded) return '504'
      if (ending.called) {
        this.#boundUnfinishedEnd()
        return '504'
      }
    }
    const action = writeExpired(
      this.res,
      this.req.method,
      { budgetMs: this.budgetMs, elapsedMs, slice },
      this.#givenBefore,
      this.callersBudget,
    )
    // A started stream that was ended, not destroyed: its end may never
    // leave. A client that stopped reading with less than the socket's
    // high-water mark waiting (an SSE feed of 1 KB events) made no write
    // wait for 'drain', so writeExpired could not tell: the end sat in
    // Node's buffer, the socket open for good (server.timeout is 0) and the
    // request never ended. So did an end a middleware ahead never completes.
    // Past a grace without progress it is destroyed as such a stream is.
    if (action === 'ended') this.#boundEndedStream()
    // The 504's `end` reached a middleware that completes it later
    // (express-session saving to its store) and has not: bounded as
    // respond's answer is. A store that never answered held the 504 for
    // good, all but its last byte sent, and the request never ended.
    else if (action === '504') this.#boundUnfinishedEnd()
    return action
  }

  /**
   * An answer of ours (respond's, the plain 504) whose `end` a middleware
   * completes later and has not: bounded by `#boundDeferredEnd`, from its
   * turn (see `fromItsTurn`) — one queued behind another pipelined answer
   * waits for it, neither cut while it waits nor left unbounded once it
   * has its socket. Nothing for one complete by then.
   */
  #boundUnfinishedEnd(): void {
    // Taken now: the late writers' swallowing (next in `#expire`) wraps `destroy` too.
    const destroy = this.res.destroy
    this.#forgetTurn = fromItsTurn(this.res, () => this.#boundDeferredEnd(destroy))
  }

  /**
   * A started stream the deadline ended, whose end has not left yet: kept
   * while its bytes move, destroyed after a grace without progress (see
   * `#whileItMoves`), from its turn (see `fromItsTurn`). One queued behind
   * another pipelined answer was left out of the bound altogether (a
   * destroy while it waits took the shared connection), and was held for
   * good once its turn came: an end a middleware ahead never completed, or
   * megabytes buffered while it waited, for a client that stopped reading.
   * Judged by progress, not a fixed grace: those megabytes take a client
   * still reading them longer than that.
   */
  #boundEndedStream(): void {
    // Taken now: the late writers' swallowing (next in `#expire`) wraps `destroy` too.
    const destroy = this.res.destroy
    this.#forgetTurn = fromItsTurn(
      this.res,
      () => this.#whileItMoves(destroy, (link) => IngressRequest.#endGraceFired(link)),
      'finish',
    )
  }

  /**
   * `respond` called `end` and a middleware completes it later
   * (express-session, once its store has answered): the answer is kept, but
   * not for ever. A store that never answers held the socket and everything
   * buffered for good, the request never ended (no end event): past the
   * grace the response is destroyed, and `#onClose` ends the request
   * `expired`. The timer is on the deadline's clock, cleared by `#finish`.
   */
  #boundDeferredEnd(destroy = this.res.destroy): void {
    // Taken now (or by the caller, before): the late writers' swallowing
    // (next in `#expire`) wraps `destroy` too.
    const link: TimerLink = { ingress: this, destroy, handle: undefined }
    this.#endGrace = link
    link.handle = this.deadline.clock.setTimeout(
      () => IngressRequest.#endGraceFired(link),
      RESPOND_END_GRACE_MS,
    )
  }

  /**
   * The handler ended its answer in time through the `end` of a middleware
   * ahead that completes it later (see `watchMiddlewareEnd`): compression
   * feeding zlib's output to a slow reader, a session store saving. Not
   * the deadline's to cut while bytes still leave — the whole download may
   * take longer than the budget, as an answer Node ended would — but not
   * kept for ever either: a store that never answers, or a client that
   * stopped reading, held the socket with no event at all (20 of 20
   * requests open 3 s on, behind a session store that never called back).
   * A grace without a byte sent (see `responseProgress`) ends it as a
   * stalled deferred end is ended: destroyed, the request ending `expired`
   * (its expiry published then, action `ended`). Not in observe mode,
   * which cuts nothing.
   */
  #watchMiddlewareEnd(slice: string | undefined): void {
    this.#whileItMoves(this.res.destroy, (link) => {
      if (this.#finished || this.res.writableFinished) return
      this.#answered = true
      this.#outcome = 'expired'
      this.#publishExpire('handler', 'ended', slice, this.deadline.elapsed())
      IngressRequest.#endGraceFired(link)
    })
  }

  /**
   * Arms the end grace as a watch on the response's progress (see
   * `responseProgress`): checked every `RESPOND_END_GRACE_MS` on the
   * deadline's clock, re-armed while its bytes move, `stalled` called once
   * a grace passed without. Cleared by `#finish`.
   */
  #whileItMoves(destroy: () => void, stalled: (link: TimerLink) => void): void {
    const link: TimerLink = { ingress: this, destroy, handle: undefined }
    this.#endGrace = link
    const clock = this.deadline.clock
    const progress = responseProgress(this.res)
    let sent = progress()
    const check = (): void => {
      if (link.ingress === undefined) return
      const now = progress()
      if (now !== sent) {
        sent = now
        link.handle = clock.setTimeout(check, RESPOND_END_GRACE_MS)
        return
      }
      stalled(link)
    }
    link.handle = clock.setTimeout(check, RESPOND_END_GRACE_MS)
  }

  static #endGraceFired(link: TimerLink): void {
    const { ingress, destroy } = link
    // Cleared, by a clock that could not cancel it (see `TimerLink`).
    if (ingress === undefined || destroy === undefined) return
    unlink(link)
    ingress.#endGrace = undefined
    if (!ingress.#finished && !ingress.res.writableFinished) destroy.call(ingress.res)
  }

  /** See `#finish`: an answer that ended after the caller's deadline, before our timer ran. */
  #reportLate(): void {
    const slice = this.#runningSlice()
    const elapsedMs = this.deadline.elapsed()
    if (!this.#options.observe) {
      this.#outcome = 'expired'
      // What the timer would have done had it had its turn (as `#expire`
      // does): the work still running for an answer already out is stopped.
      // Left running, it held the request's server span in @hourglass/otel
      // until it ended on its own. (`#onDeadlineCancel` ignores it: finished.)
      this.deadline.cancel(
        isDeadlineExceeded(this.deadline.reason)
          ? this.deadline.reason
          : new DeadlineExceededError({ budgetMs: this.budgetMs, elapsedMs, slice }),
      )
    }
    this.#publishExpire('handler', this.#options.observe ? 'observed' : 'late', slice, elapsedMs)
  }

  #publishExpire(
    stage: IngressExpireMessage['stage'],
    action: IngressExpireMessage['action'],
    slice: string | undefined,
    elapsedMs: number,
  ): void {
    const event: IngressExpireMessage = {
      deadline: this.deadline,
      req: this.req,
      budgetMs: this.budgetMs,
      elapsedMs,
      slice,
      stage,
      action,
    }
    expressChannels.expire.publish(() => event)
    callHook(this.#options.onExpire, event)
  }

  #runningSlice(): string | undefined {
    // Core's `runningSlice` reads deadline({ plan })'s plan (the last made on
    // our deadline, unless the route made one there too: then its step `run`
    // started, still pending, after the route's), a plan the route made on
    // `req.deadline`, and the last one made under it (on a deadline a
    // handler put in its place, a budget on trial, a cap of its own) — and
    // leaves out a slice the route started, never ended, and moved on from.
    // Read ahead of it, deadline({ plan })'s forgotten slice was named
    // instead of the later plan's step the time ran out in.
    return runningSlice(this.deadline)
  }

  // A method, bound only when a request expires: not a closure per request.
  #reportLateWrite(method: string): void {
    const event: IngressLateWriteMessage = { req: this.req, method }
    expressChannels.lateWrite.publish(() => event)
    callHook(this.#options.onLateWrite, event)
  }

  #listenFinish(): void {
    if (this.#onFinish !== undefined || this.#finished) return
    this.#onFinish = () => this.#finishEvent()
    on.call(this.res, 'finish', this.#onFinish)
  }

  #finishEvent(): void {
    // HTTP/2's compat API emits 'finish' (then 'close') for a stream that
    // closed, ended or not: a client's RST_STREAM came here as a response
    // finished in time — outcome `ok`, the deadline disposed, not cancelled,
    // and the work went on for a caller who had left. Over HTTP/1 'finish'
    // follows `end()`: this reads true.
    if (!this.res.writableEnded) {
      this.#onClose()
      return
    }
    // Our own 504 was flushed: how late, after its deadline, feeds the adaptive reserve.
    if (this.#timedOutAt !== undefined) {
      recordAnswerLateness(this.deadline.clock.now() - this.#timedOutAt)
    }
    this.#finish()
  }

  readonly #onClose = (): void => {
    // Once: `start` calls it for a response already closed, and
    // closeIfOrphaned may have closed it (synchronously) just before.
    if (this.#finished) return
    if (!this.res.writableEnded && !this.#answered) {
      // Over before it was complete: nobody will read the rest, so stop
      // everything done for it; no 504. Either the server's own code
      // destroyed it with an error (a `pipeline` whose source failed
      // destroys the response with that error), or the caller left (its FIN
      // or reset, seen on the socket), or the server cut it without an error
      // (`res.destroy()`, `closeAllConnections()`, a server timeout): that is
      // the server's doing too, with the client still there, so `error`.
      const errored = ownError(this.res.errored ?? streamError(this.res))
      const error = errored ?? (clientLeft(this.req) ? undefined : serverCut(this.req))
      if (error) {
        this.#cut = !errored
        this.#outcome = 'error'
        this.#error = error
        this.deadline.cancel(error)
      } else {
        this.#outcome = 'client-closed'
        this.deadline.cancel(new ClientClosedError())
        expressChannels.clientClosed.publish(() => ({
          deadline: this.deadline,
          req: this.req,
          elapsedMs: this.deadline.elapsed(),
        }))
      }
      // Node leaves a plain `pipe`'s source open when its destination
      // closes: it unpipes it (right after this listener) and we destroy it.
      stopPipedSources(this.res, this.deadline.reason)
    }
    this.#finish()
  }

  #finish(): void {
    if (this.#finished) return
    this.#finished = true
    if (this.#endGrace !== undefined) {
      this.deadline.clock.clearTimeout(unlink(this.#endGrace))
      this.#endGrace = undefined
    }
    if (this.#forgetTurn !== undefined) {
      this.#forgetTurn()
      this.#forgetTurn = undefined
    }
    // A handler that cancelled its deadline still had its 504 due (`#stillDue`).
    const stillDue = this.#stillDue !== undefined
    if (stillDue) this.#clearStillDue()
    if (this.#onFinish !== undefined) removeListener.call(this.res, 'finish', this.#onFinish)
    removeListener.call(this.res, 'close', this.#onClose)
    // Ended after the caller's deadline, before the deadline's timer (or
    // the 504 still due) had its turn: the loop was busy (the handler's own
    // synchronous work, or another request's), and the answer was written
    // in the turn that ended the stall. It went out as written, late for
    // its caller: a 504 could not have been on time either. Reported `ok`
    // (no `expire`, no `onExpire`), it was counted as an answer in time, and
    // a busy process's late answers were invisible — in dark mode too, whose
    // expiry is its timer's. Judged against the caller's budget, not the
    // handler's deadline (`reserveMs` earlier): an answer within the reserve
    // reached its caller in time. And when the response ends, not when the
    // handler called `end()` (watching that costs every request a listener):
    // an answer ended in time whose flush was only told after a stall past
    // the deadline is reported too, on a loop that was late for it anyway.
    if (
      this.#outcome === 'ok' &&
      !this.#answered &&
      !this.#observed &&
      (stillDue || !this.deadline.done || this.#queuedAtExpiry) &&
      this.deadline.elapsed() >= this.budgetMs
    ) {
      this.#reportLate()
    }
    this.deadline.dispose()
    if (expressChannels.end.hasSubscribers) {
      expressChannels.end.publish(() => {
        const message: IngressEndMessage = {
          deadline: this.deadline,
          req: this.req,
          statusCode: this.res.statusCode,
          elapsedMs: this.deadline.elapsed(),
          outcome: this.#outcome,
        }
        if (this.#outcome === 'error') {
          message.error = this.#error
          // Node answered it itself on the raw socket (its requestTimeout's
          // 408): the response, which never started, still reads 200.
          if (this.#cut)
            message.statusCode = nodeAnswered(this.req, this.res, this.#error) ?? message.statusCode
        }
        return message
      })
    }
  }
}

/**
 * The error `respond` is given: `reason` with the request's figures — its
 * budget (`budgetMs`, as the plain 504's body and the `expire` event have
 * it), the time since arrival, and the slice that was running. Our own
 * timer's expiry carries the handler's deadline's budget (the request's less
 * `reserveMs`: 990 of 1000) and names no slice (the request's deadline has no
 * name), where a slice that ran out first (via deadlineErrors) gave 1000 and
 * its name: one request's expiry reported two ways by the path it took.
 * Made only for such an answer: the reason as its cause, still the
 * request's expiry.
 */
function asRequestExpiry(
  reason: DeadlineExceededError,
  budgetMs: number,
  elapsedMs: number,
  running: string | undefined,
  deadline: Deadline,
): DeadlineExceededError {
  const slice = reason.slice ?? running
  const same =
    reason.budgetMs === Math.round(budgetMs) &&
    reason.elapsedMs === Math.round(elapsedMs) &&
    reason.slice === slice
  if (same) return reason
  return markExpiryOf(
    new DeadlineExceededError({ budgetMs, elapsedMs, slice, cause: reason }),
    deadline,
  )
}

/**
 * One of our timers (the 504 still due, respond's end grace), and what its
 * callback reaches the request through: emptied when the timer is cleared or
 * fires. A clock whose setTimeout returns no handle (core's Clock type
 * allows it: `undefined`) cannot clear it, and a callback that held the
 * request itself kept its req, res and everything they reach until it
 * fired: the whole budget, or the grace. Made only when a timer is armed:
 * a request that arms none (nearly all) allocates nothing for it.
 */
interface TimerLink {
  ingress: IngressRequest | undefined
  /** The grace's `res.destroy`, taken when armed (see `#boundDeferredEnd`). */
  destroy: (() => void) | undefined
  /** What the clock's setTimeout returned, for its clearTimeout. */
  handle: unknown
}

/** Empties `link` (its callback then does nothing); returns the handle to clear. */
function unlink(link: TimerLink): unknown {
  link.ingress = undefined
  link.destroy = undefined
  return link.handle
}

function http2Stream(
  res: ServerResponse,
): { destroyed?: boolean; errored?: Error | null } | undefined {
  return (res as { stream?: { destroyed?: boolean; errored?: Error | null } }).stream
}

/**
 * What HTTP/2's compat response was destroyed with: it has no `errored`,
 * its stream has (a handler's `res.destroy(error)`, a `pipeline` whose
 * source failed: `client-closed` before, where HTTP/1 said `error`). Not
 * the marks a peer leaves, a bare code and no error of the app's: its
 * reset of the stream other than CANCEL (`ERR_HTTP2_STREAM_ERROR`; CANCEL
 * leaves none), or its GOAWAY with an error code, which Node destroys the
 * session and every stream on it with (`ERR_HTTP2_SESSION_ERROR`: a
 * client's `session.destroy(error)` read `error`). Those are the client
 * leaving. Told by code alone, an app's own `pipeline` from an upstream
 * HTTP/2 stream that the upstream reset reads as its client leaving too.
 */
function streamError(res: ServerResponse): Error | null | undefined {
  const errored = http2Stream(res)?.errored
  const code = (errored as { code?: unknown } | null | undefined)?.code
  return code === 'ERR_HTTP2_STREAM_ERROR' || code === 'ERR_HTTP2_SESSION_ERROR' ? null : errored
}

/**
 * What the response was destroyed with, unless it is Node's own mark of a
 * connection that closed under it: Node 24 destroys every response still
 * queued behind the one being written with `ConnResetException('aborted')`
 * (`abortOutgoing` in _http_server; code ECONNRESET, no syscall), which says
 * nothing of whether the client left or the server cut it — the socket does
 * (`clientLeft`, `serverCut`), as on Node 20 and 22, which set no error.
 */
function ownError(errored: Error | null | undefined): Error | null | undefined {
  const e = errored as (Error & { code?: unknown; syscall?: unknown }) | null | undefined
  if (e?.code === 'ECONNRESET' && e.message === 'aborted' && e.syscall === undefined) return null
  return errored
}

/**
 * `Expect: 100-continue` left to us: the server has a `checkContinue`
 * listener (`server.on('checkContinue', app)`), so Node wrote no `100
 * Continue` and the client is holding its body back. The request has budget
 * and its chain runs: the upload may come once something reads the body (a
 * `data` or `readable` listener: a body parser, a pipe, an async iteration)
 * or resumes it to drain it (`req.resume()`: Express's final handler does,
 * and answers its 404, or a `next(error)`'s status, only once the body has
 * ended), not before — a middleware that refuses first (an auth check's 401)
 * answers with no upload, as the listener is meant to allow. Without the
 * resume, the final handler waited for a body never asked for: the client
 * got a 504 at its deadline instead of its 404 or 401. The resume is heard
 * from the stream's 'resume' event, a tick after the call: an answer written
 * meanwhile gets no 100 (Node resumes every unread request itself once its
 * answer is out: no 100 then either). One that arrived expired, or that
 * `strict` refused, is answered without it too. Node closes the connection
 * after an answer whose body never came. Without such a listener Node
 * answered `100 Continue` itself on arrival, before any middleware
 * (`_sent100`): nothing to do. HTTP/2's response has neither flag: left as
 * Node leaves it.
 */
function continueUpload(req: IncomingMessage, res: ServerResponse): void {
  const flags = res as unknown as { _expect_continue?: boolean; _sent100?: boolean }
  if (flags._expect_continue !== true || flags._sent100 === true) return
  const ask = (): void => {
    req.off('newListener', onListener)
    req.off('resume', ask)
    // Not once an answer started; ahead of a head stored and not sent.
    writeContinueAhead(res)
  }
  const onListener = (event: string | symbol): void => {
    if (event === 'data' || event === 'readable') ask()
  }
  req.on('resume', ask)
  req.on('newListener', onListener)
}
