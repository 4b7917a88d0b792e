import { AsyncResource } from 'node:async_hooks'
import { channel } from 'node:diagnostics_channel'
import { Readable } from 'node:stream'
import {
  currentDeadline,
  type Deadline,
  fieldOf,
  MAX_TIMER_MS,
  refuseUnknownOptions,
} from '@hourglass/core'
import type { Dispatcher } from 'undici'
import type { Attempt } from './Attempt.js'
import {
  type AttemptHandlerHooks,
  attemptHandler,
  ControllerView,
  type HeaderLookup,
} from './AttemptHandler.js'
import { asError } from './asError.js'
import { dispatchEventUrl } from './channels.js'
import {
  dispatchHasHeader,
  isBodyReplayable,
  isRepeatable,
  takenHeaders,
} from './dispatchHeaders.js'
import { forwardedReason } from './forwardedReason.js'
import { noBudgetError } from './noBudgetError.js'
import { type CallDriver, OutboundCall, type OutboundCallInit } from './OutboundCall.js'
import {
  CONNECTOR_OPTION_NAMES,
  type EgressOptions,
  mergeRetry,
  type PhaseLimits,
  type ResolvedOptions,
  type ResolvedRetry,
  type RetryOptions,
  resolveOptions,
} from './options.js'
import { SENT_BY_HOURGLASS, sendAttempt } from './sendAttempt.js'

/** Extra dispatch options the interceptor reads (cast them in: undici's types do not list them). */
export interface DeadlineDispatchOptions {
  /** The deadline of this request; default `currentDeadline()`. */
  deadline?: Deadline
  /** This request's retry rules, field by field over the interceptor's (its `false`: every rule off, so only those named here apply); `false` = none. */
  retry?: RetryOptions | false
}

/**
 * How `createFetch` hands its call to the interceptor: undici's fetch passes
 * no options of its own down to `dispatch`, so createFetch sends through a
 * per-call dispatcher that adds this field to the dispatch options.
 * @internal
 */
export const FETCH_ATTEMPT = Symbol('@hourglass/fetch.attempt')

/** @internal What createFetch puts under `FETCH_ATTEMPT`: its call, and the attempt number. */
export interface FetchAttempt {
  call: OutboundCall
  number: number
  /**
   * Dispatches of this attempt so far (counted by `started`): fetch follows
   * redirects inside one attempt, each hop a dispatch of its own, so one
   * made after the first is the target of redirect number `hops`.
   */
  hops: number
  /** Told the attempt once it exists (createFetch reads its bytes and reason). */
  started(attempt: Attempt): void
}

type Opts = Dispatcher.DispatchOptions &
  DeadlineDispatchOptions & {
    [FETCH_ATTEMPT]?: FetchAttempt | undefined
    [SENT_BY_HOURGLASS]?: true
  }

/**
 * The behaviour of `createFetch` as an undici interceptor, for code that uses
 * undici directly: `new Agent({ connect: createConnector(opts), headersTimeout: 0, bodyTimeout: 0 }).compose(deadlineInterceptor(opts))`
 * (an Agent's own headersTimeout / bodyTimeout stay in force, undici's 300 s
 * default too: the phase limits only narrow them).
 * Propagates the deadline header, bounds the headers and body phases (the
 * connector bounds DNS and connect), and retries on evidence — only bodies
 * that can be sent twice (none, a string, bytes, a Blob, a FormData:
 * `isBodyReplayable`), and after a connect refused at once a stream nothing
 * has read yet (`isBodyUnread`) — through the same retry loop as
 * `createFetch` (`OutboundCall`).
 */
export function deadlineInterceptor(
  options: EgressOptions = {},
): Dispatcher.DispatcherComposeInterceptor {
  // createConnector's options too (`tls`): one object serves both. Options
  // that are no object are refused by name: an interceptor is composed far
  // from the call that fails (an Agent's compose()).
  refuseUnknownOptions(options, CONNECTOR_OPTION_NAMES, 'deadlineInterceptor()')
  return interceptorFor(resolveOptions(options, 'deadlineInterceptor()'))
}

/** The interceptor over options already resolved (createFetch resolves them once for agent, connector and interceptor). */
export function interceptorFor(config: ResolvedOptions): Dispatcher.DispatcherComposeInterceptor {
  return (dispatch) => (opts: Opts, handler) => {
    // An attempt of a deadline layer above this one (createFetch's, or this
    // interceptor composed twice): that layer's call owns it — its phase
    // limits, header and retries — so this one adds none of its own.
    if (opts[SENT_BY_HOURGLASS] === true) return dispatch(opts, handler)
    const fetchAttempt = opts[FETCH_ATTEMPT]
    if (fetchAttempt) {
      // createFetch drives this call and its retries: one attempt here, or
      // one redirect hop of it (its events name the hop's own URL).
      const redirect = fetchAttempt.hops
      const attempt = fetchAttempt.call.attempt(
        fetchAttempt.number,
        redirect === 0
          ? undefined
          : { redirect, origin: opts.origin, path: opts.path, method: opts.method },
      )
      // A hop is a request of its own, and fetch dispatches it whenever the
      // redirect arrives: with the budget spent (under `minBudgetMs`, or 0
      // with the deadline's timer not yet run on a busy loop) it went out
      // all the same, `x-deadline-remaining-ms: 0`, to a server that would
      // then work for a caller already failing. The first attempt and every
      // retry are refused so (OutboundCall's `#refusal`): the hop is too,
      // before it is announced or sent, as if the deadline had ended.
      if (redirect > 0 && attempt.reason === undefined) {
        const spent = noBudgetError(
          fetchAttempt.call.init.deadline,
          config.minBudgetMs,
          fetchAttempt.call.bound,
        )
        if (spent !== undefined) attempt.abort(spent)
      }
      fetchAttempt.started(attempt)
      if (attempt.reason !== undefined) {
        // Ended before it was sent: the deadline or the caller went between
        // two redirect hops (fetch dispatches each hop itself). Nothing is
        // looked up, connected or sent for it.
        handler.onResponseError?.(new ControllerView(), asError(attempt.reason))
        return true
      }
      return sendAttempt(dispatch, opts, attemptHandler(handler, attempt), attempt)
    }
    // Read by every attempt: taken now, as undici takes them (a one-shot
    // iterator read once, a record the caller changes afterwards unchanged).
    const headers = takenHeaders(opts.headers)
    const body = watchedBody(opts.body)
    const own =
      headers === opts.headers && body === opts.body
        ? opts
        : (Object.assign({}, opts, { headers, body }) as Opts)
    new DispatchCall(config, dispatch, own, handler).start()
    return true
  }
}

/**
 * What a call through the interceptor is, from its dispatch options: the
 * origin, path and headers it needs later (for events and the retry
 * decision), never the options object itself nor the handler. A class with
 * prototype methods: no closure or accessor literal per request.
 */
class DispatchCallInit implements OutboundCallInit {
  readonly config: ResolvedOptions
  readonly deadline: Deadline | undefined
  /**
   * undici's `signal` (request/stream options). undici's own handler acts on
   * it only once the connection is up (its abort arrives through
   * `onConnect`): an abort while the name is looked up or the socket
   * connects waited for the phase's limit, and the caller got a
   * DNS/connect timeout instead of its own reason. The attempt listens to
   * it directly, as createFetch's attempts listen to `init.signal`.
   */
  readonly signal: AbortSignal | undefined
  readonly method: string
  readonly retry: ResolvedRetry | false
  /** Set once a stream body is found empty, sent whole (`DispatchCall.#emptyBodySent`). */
  replayable: boolean
  /** The config's phase limits, or narrower ones for this request (see `callerLimits`). */
  readonly limits: PhaseLimits
  /**
   * The dispatch's origin; undefined when the dispatcher beneath brings its
   * own (a Pool's or Client's own API, `pool.request({ path })`): then the
   * one undici makes the request with, found as it is dispatched (`send`).
   */
  origin: unknown
  readonly #path: string
  readonly #headers: Opts['headers']

  constructor(config: ResolvedOptions, opts: Opts) {
    this.config = config
    this.deadline = opts.deadline ?? currentDeadline()
    this.signal = abortSignalOf((opts as { signal?: unknown }).signal)
    // As undici sends it (it does not change a method's case): the retry
    // rules and the events name the request that goes out.
    this.method = opts.method
    this.retry = mergeRetry(config.retry, opts.retry)
    this.replayable = isBodyReplayable(opts.body)
    this.limits = callerLimits(config, opts.headersTimeout, opts.bodyTimeout)
    this.origin = opts.origin
    this.#path = opts.path
    this.#headers = opts.headers
  }

  /** Origin and path, for events (no query); read only when an event is published. */
  get url(): string {
    return dispatchEventUrl(this.origin, this.#path)
  }

  repeatable(): boolean {
    return isRepeatable(this.method, dispatchHasHeader(this.#headers, 'idempotency-key'))
  }
}

/**
 * One call through the interceptor: the retry loop's driver and its
 * attempts' hooks in one object, fields and methods rather than closures.
 * The call's description (`OutboundCallInit`) is a separate small object
 * that holds no reference to the dispatch options or the handler: every
 * attempt keeps it, and an attempt that outlives its request in the heap
 * (measured: most of the interceptor's garbage-collection time) must not
 * keep the handler's response with it.
 */
class DispatchCall implements CallDriver, AttemptHandlerHooks {
  readonly #dispatch: Dispatcher.Dispatch
  /** The caller's; without its body once that proved an empty stream (`#emptyBodySent`). */
  #opts: Opts
  readonly #handler: Dispatcher.DispatchHandler
  readonly #call: OutboundCall
  /** One view across attempts: the caller's abort (undici.request's signal calls it) reaches the attempt in flight, or ends a pending retry wait. */
  readonly #view: ControllerView
  /** The caller's async context (see AttemptHandlerHooks.scope); the call's retry loop runs in it too. */
  readonly scope: AsyncResource
  #started = false
  #answered = false
  /** An attempt is being handed to the dispatcher beneath: a refusal heard now is undici's (see `beforeError`). */
  #sending = false
  /**
   * The failure the retry in flight was decided for (an error: those retries
   * are sent at once, with no wait), or undefined (none, or a status).
   */
  #retriedFor: unknown

  constructor(
    config: ResolvedOptions,
    dispatch: Dispatcher.Dispatch,
    opts: Opts,
    handler: Dispatcher.DispatchHandler,
  ) {
    this.#dispatch = dispatch
    this.#opts = opts
    this.#handler = handler
    // Made per call (~0.1 µs): a retry decided in undici's callbacks runs in the caller's context.
    this.scope = new AsyncResource('HourglassOutboundCall')
    this.#call = new OutboundCall(new DispatchCallInit(config, opts), this.scope)
    this.#view = new ControllerView(this.#call)
  }

  start(): void {
    this.#call.drive(this)
  }

  send(number: number): void {
    const attempt = this.#call.attempt(number)
    const init = this.#call.init as DispatchCallInit
    // No origin in the options (a Pool's or Client's own `request({ path })`):
    // its events named the path alone, and otel's `url.full` read `/v1/items`.
    // The Client beneath makes its request during the dispatch: the origin
    // is read off it, and the attempt announced after. Per attempt: a
    // BalancedPool sends a retry to another upstream (its events named the
    // first one's).
    const findOrigin = this.#opts.origin == null
    // Kept for a request a busy Pool queues (made later, outside this
    // dispatch: nothing is read for it): named as the attempt before it was.
    const previous = init.origin
    if (findOrigin) init.origin = undefined
    // A retry sent at once for a failure may be refused as it is handed
    // over (see `beforeError`): a retry never made, so not announced as an
    // attempt until the dispatch is past that refusal.
    if (this.#retriedFor !== undefined || findOrigin) attempt.holdAnnouncement()
    if (findOrigin) findOriginOf(init)
    this.#sending = true
    try {
      sendAttempt(
        this.#dispatch,
        this.#opts,
        attemptHandler(this.#handler, attempt, this, this.#view),
        attempt,
      )
    } finally {
      if (originless === init) originless = undefined
      if (findOrigin && init.origin == null) init.origin = previous
      this.#sending = false
      attempt.announceHeld(true)
    }
  }

  /** Refused before a send (no budget), or stopped between attempts: the caller has had no answer yet, so this is it. */
  end(error: unknown): void {
    if (this.#answered) return
    // As it is: a caller's reason that is not an Error is what undici itself rejects with.
    queueMicrotask(() => {
      const reason = forwardedReason(error)
      const handler = this.#handler
      if (typeof handler.onResponseError === 'function') handler.onResponseError(this.#view, reason)
      // A handler of undici's first API handed to the interceptor as it is
      // (used without compose(), which wraps it in both APIs): told through
      // onError, or it heard nothing and its request never settled.
      else (handler as { onError?: (error: unknown) => void }).onError?.(reason)
    })
  }

  forwardRequestStart(): boolean {
    if (this.#started) return false
    this.#started = true
    return true
  }

  beforeError(error: unknown, responded: boolean, attempt: Attempt): boolean {
    const failure = this.#retriedFor
    this.#retriedFor = undefined
    if (
      failure !== undefined &&
      !responded &&
      this.#sending &&
      // Thrown by the caller's own interceptor beneath, whatever its code:
      // its refusal, the call's failure as any throw there is (sendAttempt).
      !attempt.dispatchThrew &&
      refusedAsClosed(error)
    ) {
      // The retry of a request that failed while the Agent beneath was being
      // closed (undici's close() lets a request in flight finish): the
      // closed Agent refused it as it was handed over, nothing sent. The
      // caller gets the failure that ended its request — the reset, the
      // HEADERS_TIMEOUT — as createFetch gives it, not undici's "The client
      // is closed" in its place. Only for a retry sent at once (an error's:
      // a status's waits its Retry-After, and a close during that wait is
      // the caller's to hear, as in createFetch). No attempt is announced
      // for it (`send` held it): the retry was never made, as the
      // `retry-skipped` says.
      attempt.announceHeld(false)
      this.#call.retryRefused(attempt.init.number)
      this.end(failure)
      this.#decide(undefined)
      return true
    }
    // Failed otherwise during its send: announced, before the decision on it.
    attempt.announceHeld(true)
    this.#emptyBodySent()
    // The caller stopped reading an answer it has (destroyed the body,
    // aborted its signal): nothing failed, nothing was left to retry — no
    // decision to announce. As createFetch leaves it. So too for an answer
    // whose attempt had already ended whole (a 204 or 304 ends with its
    // headers): whatever stops it after that (the caller, undici's length
    // check) failed nothing.
    if (
      responded &&
      (attempt.stoppedBy === 'caller' || (attempt.done && attempt.error === undefined))
    ) {
      return this.#decide(undefined)
    }
    const retried = this.#decide(
      this.#call.judge(
        {
          error,
          // Or a 1xx came first: the server has the request (Attempt.interim).
          afterHeaders: responded || attempt.answerBegun,
          bytesReceived: attempt.bytesReceived,
          // The caller aborted (its signal, through the view): its reason is
          // judged as the end it is, not as a failure to retry — a fan-out
          // stopping its other calls with the first one's HeadersTimeoutError
          // had a retry announced that was never sent. As createFetch judges it.
          callerAborted: !responded && this.#call.stopped,
          dispatchThrew: attempt.dispatchThrew,
          bodyUnread: !this.#call.init.replayable && isBodyUnread(this.#opts.body),
        },
        attempt.init.number,
      ),
    )
    if (retried) this.#retriedFor = error
    return retried
  }

  beforeResponse(status: number, header: HeaderLookup, attempt: Attempt): boolean {
    this.#retriedFor = undefined
    // Answered during its send (a dispatcher that answers at once): announced before the decision on it.
    attempt.announceHeld(true)
    this.#emptyBodySent()
    return this.#decide(this.#call.judge({ status, header, bytesReceived: 0 }, attempt.init.number))
  }

  /**
   * A Node stream body read to its end without one chunk (`readableDidRead`:
   * no `'data'` ever emitted, however undici read it, over HTTP/1 or 2) was
   * empty: a retry sends no body in its place, the same request on the wire
   * (no body, or `content-length: 0` where the method expects one). undici's
   * `pipeline()` hands every request such a stream, a GET's too: its
   * headers timeout or listed 503 was never retried (`body-not-replayable`),
   * where `request()` retried it.
   */
  #emptyBodySent(): void {
    const init = this.#call.init
    if (init.replayable || !isEmptyStreamRead(this.#opts.body)) return
    init.replayable = true
    this.#opts = Object.assign({}, this.#opts, { body: null })
  }

  #decide(delayMs: number | undefined): boolean {
    if (delayMs === undefined) this.#answered = true
    this.#call.settle(delayMs)
    return delayMs !== undefined
  }
}

/**
 * undici's per-request `headersTimeout` / `bodyTimeout` as this request's
 * phase limits: sendAttempt turns undici's timer off for a request that
 * gives one (the attempt's phase timers replace it), so a caller's value would otherwise be
 * dropped — a call plain undici ends at 1 s waited out the interceptor's
 * 10 s. A value shorter than the configured limit (or where it has none)
 * narrows it; `0` (undici: no timer) or a longer one widens nothing. The
 * config itself when neither applies: no object per request.
 */
function callerLimits(config: ResolvedOptions, headers: unknown, body: unknown): PhaseLimits {
  const headersTimeoutMs = narrower(config.headersTimeoutMs, headers)
  const bodyTimeoutMs = narrower(config.bodyTimeoutMs, body)
  if (headersTimeoutMs === config.headersTimeoutMs && bodyTimeoutMs === config.bodyTimeoutMs) {
    return config
  }
  return {
    dnsTimeoutMs: config.dnsTimeoutMs,
    connectTimeoutMs: config.connectTimeoutMs,
    headersTimeoutMs,
    bodyTimeoutMs,
  }
}

/**
 * `given` when it is a limit (a finite number > 0) shorter than `own` (`0` =
 * none), else `own`; cut to 2³¹−1 ms as the options are (`phaseLimit`): a
 * longer timer fires after 1 ms on a clock that does not cut its own.
 */
function narrower(own: number, given: unknown): number {
  if (typeof given !== 'number' || !(given > 0) || !Number.isFinite(given)) return own
  const ms = Math.min(given, MAX_TIMER_MS)
  return own === 0 || ms < own ? ms : own
}

/**
 * A stream body nothing has begun to read: a Node stream or a web stream
 * not disturbed (`Readable.isDisturbed` reads both: a web stream read to its
 * end by `for await` is unlocked again, not undisturbed), nor destroyed or
 * locked; an async iterable that no one has begun (`WatchedIterable`).
 * Asked when a connect was refused: a layer beneath (undici's redirect
 * interceptor) may have sent the body on an earlier hop before the hop
 * that was refused, so "refused" alone does not say nothing was read.
 */
function isBodyUnread(body: unknown): boolean {
  if (body instanceof WatchedIterable) return !body.began
  if (typeof body !== 'object' || body === null) return false
  const stream = body as { pipe?: unknown; on?: unknown; destroyed?: unknown; locked?: unknown }
  if (typeof stream.pipe === 'function' && typeof stream.on === 'function') {
    return stream.destroyed !== true && !Readable.isDisturbed(body as Readable)
  }
  if (typeof stream.locked === 'boolean') {
    return !stream.locked && !Readable.isDisturbed(body as unknown as Readable)
  }
  return false
}

/** A Node stream that has ended having emitted no chunk: an empty body, sent whole. */
function isEmptyStreamRead(body: unknown): boolean {
  if (typeof body !== 'object' || body === null) return false
  const stream = body as {
    pipe?: unknown
    on?: unknown
    readableEnded?: unknown
    readableDidRead?: unknown
  }
  return (
    typeof stream.pipe === 'function' &&
    typeof stream.on === 'function' &&
    stream.readableEnded === true &&
    stream.readableDidRead === false
  )
}

/**
 * An async iterable body (a generator; undici's fetch hands its dispatcher
 * one), marked when it is begun: nothing else tells whether one was read.
 * Node and web streams are not wrapped (they say so themselves), nor is
 * anything else.
 */
class WatchedIterable implements AsyncIterable<unknown> {
  began = false
  readonly #source: AsyncIterable<unknown>
  constructor(source: AsyncIterable<unknown>) {
    this.#source = source
  }
  [Symbol.asyncIterator](): AsyncIterator<unknown> {
    this.began = true
    return this.#source[Symbol.asyncIterator]()
  }
}

/** `body`, an async iterable that is no stream watched (`WatchedIterable`). */
function watchedBody(body: Opts['body']): Opts['body'] {
  if (typeof body !== 'object' || body === null) return body
  const like = body as {
    pipe?: unknown
    on?: unknown
    locked?: unknown
    [Symbol.asyncIterator]?: unknown
  }
  if (typeof like[Symbol.asyncIterator] !== 'function') return body
  if (typeof like.pipe === 'function' && typeof like.on === 'function') return body
  if (typeof like.locked === 'boolean') return body
  return new WatchedIterable(body as AsyncIterable<unknown>) as unknown as Opts['body']
}

/**
 * undici's refusal of a request handed to a dispatcher already closed or
 * destroyed (`ClientClosedError`, `ClientDestroyedError`: DispatcherBase
 * reports it through the handler before the dispatch returns).
 */
function refusedAsClosed(error: unknown): boolean {
  const code = fieldOf(error, 'code')
  return code === 'UND_ERR_CLOSED' || code === 'UND_ERR_DESTROYED'
}

/** undici also takes an EventEmitter as `signal`; only an AbortSignal is listened to here. */
function abortSignalOf(signal: unknown): AbortSignal | undefined {
  return typeof signal === 'object' &&
    signal !== null &&
    typeof (signal as AbortSignal).addEventListener === 'function' &&
    typeof (signal as AbortSignal).aborted === 'boolean'
    ? (signal as AbortSignal)
    : undefined
}

/**
 * undici publishes each request it makes (`undici:request:create`, with the
 * request's `origin`) from inside the dispatch that hands it over: the call
 * dispatching without an origin of its own takes the first one published.
 * A Pool whose connections are all busy queues the dispatch and makes the
 * request later: its events keep the path alone, as before.
 */
const requestCreate = channel('undici:request:create')
let originless: DispatchCallInit | undefined
let listeningForOrigin = false

function findOriginOf(init: DispatchCallInit): void {
  if (!listeningForOrigin) {
    listeningForOrigin = true
    requestCreate.subscribe(onRequestCreate)
  }
  originless = init
}

function onRequestCreate(message: unknown): void {
  const init = originless
  if (init === undefined) return
  originless = undefined
  const origin = (message as { request?: { origin?: unknown } } | null)?.request?.origin
  if (origin != null) init.origin = origin
}
