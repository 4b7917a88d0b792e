import type { AsyncResource } from 'node:async_hooks'
import {
  DEADLINE_EXPIRED_HEADER,
  errorCode,
  messageOf,
  saysDeadlineExpired,
  streamableReason,
} from '@hourglass/core'
import type { Dispatcher } from 'undici'
import type { Attempt } from './Attempt.js'
import { asError } from './asError.js'
import { classifyError } from './classifyError.js'
import { BodyTimeoutError } from './errors/BodyTimeoutError.js'
import { HeadersTimeoutError } from './errors/HeadersTimeoutError.js'
import { forwardedReason } from './forwardedReason.js'
import { watchUpload } from './watchUpload.js'

type Handler = Dispatcher.DispatchHandler
type Controller = Dispatcher.DispatchController

/** A response header by lower-case name (the first value), or undefined. */
export type HeaderLookup = (name: string) => string | undefined

/**
 * What the retry loop hears from an attempt's handler. Methods, not per-call
 * closures: the interceptor's call object implements them (this runs on
 * every request).
 */
export interface AttemptHandlerHooks {
  /**
   * A failure before anything reached the inner handler's response callbacks;
   * return true to swallow it (the caller retries instead).
   */
  beforeError?(error: unknown, responded: boolean, attempt: Attempt): boolean
  /** Response headers arrived; return true to swallow this response (it will be retried). */
  beforeResponse?(status: number, header: HeaderLookup, attempt: Attempt): boolean
  /** Whether to forward the request's start (a retry must not hand the inner handler a second start). */
  forwardRequestStart?(): boolean
  /**
   * The caller's async context (the interceptor's call). undici runs a
   * handler's callbacks in the context of whoever opened the socket: a
   * layer above this one that dispatches its next request from them —
   * undici's redirect interceptor at a 3xx's end, its retry interceptor at
   * a status ≥ 300 or an error — sent it under that other request's
   * `currentDeadline()` (its `x-deadline-remaining-ms`, its budget), or
   * none. Those callbacks (an answer ≥ 300, a failure: never a plain 2xx,
   * the hot path) are run in this one.
   */
  readonly scope?: AsyncResource
}

const NO_HOOKS: AttemptHandlerHooks = {}

/**
 * The callbacks of undici's first handler API, which undici 7 still uses
 * for the handlers of its own `request()`, `stream()` and `fetch()`.
 */
interface LegacyHandler {
  onConnect?(abort: (reason?: Error) => void, context?: unknown): void
  onHeaders?(status: number, rawHeaders: Buffer[], resume: () => void, statusText: string): boolean
  onData?(chunk: Buffer): boolean
  onComplete?(trailers: Buffer[] | null): void
  onError?(error: Error): void
  onUpgrade?(status: number, rawHeaders: Buffer[] | null, socket: unknown): void
  onResponseStarted?(): void
  onBodySent?(chunkSize: number, totalBytesSent: number): void
  onRequestSent?(): void
}

/**
 * The handler for one attempt, in the API the inner handler speaks.
 *
 * Through `compose`, undici 7 hands an interceptor the handler of
 * `request()` or `fetch()` wrapped for its second handler API, and unwraps
 * whatever the interceptor dispatches back to the first before the
 * connection sees it: the response headers go from the parser's raw buffers
 * to an object and back to buffers on every response. When the inner
 * handler still speaks the first API (undici's wrapper does), the attempt
 * handler speaks it too and hands the raw headers straight through — the
 * interceptor then costs less than an empty one.
 */
export function attemptHandler(
  inner: Handler,
  attempt: Attempt,
  hooks: AttemptHandlerHooks = NO_HOOKS,
  view?: ControllerView,
): Handler {
  return typeof (inner as LegacyHandler).onHeaders === 'function'
    ? (new LegacyAttemptHandler(inner as LegacyHandler, attempt, hooks, view) as unknown as Handler)
    : new AttemptHandler(inner, attempt, hooks, view)
}

/**
 * What both handler APIs share: an `Attempt` driven through its phases —
 * headers from the moment the request is written (restarted by each piece
 * of the upload, where the handler API tells of it), body from the first byte,
 * idle gaps between chunks — and a stop on the deadline or the caller's
 * signal, even while the request still waits for its connection.
 */
abstract class AttemptPhases {
  protected readonly attempt: Attempt
  protected readonly hooks: AttemptHandlerHooks
  protected readonly view: ControllerView
  protected errored = false
  protected swallow = false
  protected responded = false

  constructor(attempt: Attempt, hooks: AttemptHandlerHooks, view: ControllerView | undefined) {
    this.attempt = attempt
    this.hooks = hooks
    this.view = view ?? new ControllerView()
    this.view.attempt = attempt
    this.view.controller = undefined
    this.view.abortRequest = undefined
    attempt.onAbort((reason) => {
      // Still waiting for a socket: answer now, drop what comes later.
      if (!this.abortRequest(asError(reason))) this.fail(reason)
      // undici errors a request in its abort, at once. A layer beneath that
      // holds the request between two tries of its own (undici's retry
      // interceptor composed inside this one, asleep for its back-off) has
      // no request to abort and says nothing until it wakes: the caller
      // waited out that back-off (a Retry-After of up to 30 s) past its
      // deadline. Answer now; what that layer says later is dropped.
      else if (!this.errored && !this.swallow) this.fail(reason)
    })
  }

  /** Abort the request in flight; false when there is none yet. */
  protected abstract abortRequest(reason: Error): boolean
  /** `error` as it is: a caller's abort reason that is not an Error reaches it unwrapped, as undici passes it. */
  protected abstract forwardError(error: unknown): void

  /**
   * This attempt is over (failed, stopped, or its answer swallowed for a
   * retry), yet a layer beneath still has a request for it: undici's retry
   * interceptor composed inside this one sends its own retry (or resumes a
   * broken body) when its back-off ends, through this attempt's handler —
   * after the caller was answered, or while our retry of it streams. That
   * request is stopped, and never becomes the call's: written into the
   * shared controller view, it turned the caller's `aborted` true mid-body
   * and took its `pause()` away from the live request.
   */
  protected over(): Error | undefined {
    if (this.attempt.reason !== undefined) return asError(this.attempt.reason)
    return this.errored || this.swallow ? new Error('this attempt is over') : undefined
  }

  /** The request is on its way; false = do not tell the inner handler (stopped, or a retry). */
  protected started(): boolean {
    if (this.attempt.reason !== undefined) {
      this.abortRequest(asError(this.attempt.reason))
      return false
    }
    this.attempt.enter('headers')
    // undici writes the request next, in this same synchronous run: an
    // upload's socket is found as it does (watchUpload).
    if (this.attempt.uploads) watchUpload(this.attempt)
    return this.hooks.forwardRequestStart?.() ?? true
  }

  /** Final response headers; false = swallowed (retried), nothing reaches the inner handler. */
  protected headers(status: number, header: HeaderLookup): boolean {
    this.attempt.statusCode = status
    if (status >= 300 && status < 400) this.attempt.location = header('location')
    // An Hourglass hop behind this URL answered that its own deadline ran out.
    if (status === 504 && saysDeadlineExpired(header(DEADLINE_EXPIRED_HEADER))) {
      this.attempt.upstreamDeadline = true
    }
    this.attempt.enter('body')
    if (this.hooks.beforeResponse?.(status, header, this.attempt)) {
      this.swallow = true
      this.abortRequest(new Error('retrying'))
      return false
    }
    this.responded = true
    // A 204 or 304 is complete with its headers (RFC 9112 §6.3), whatever
    // its Content-Length says: its attempt ends here. undici ends it only
    // when it has failed the answer for the body it never has (a socket
    // destroyed a turn later, see error()): by then fetch had handed out the
    // answer with no body to read, and a caller that read it (probe) found
    // the attempt still running — no sample. One comparison on the hot path.
    if (status === 204 || status === 304) this.attempt.finish()
    return true
  }

  protected error(error: Error): void {
    if (this.swallow) {
      this.attempt.finish()
      return
    }
    if (
      this.responded &&
      this.attempt.reason === undefined &&
      bodilessAnswer(error, this.attempt)
    ) {
      // A 304 or 204 ends with its headers, whatever they say (RFC 9112
      // §6.3; a 304 may give the length of the representation it stands
      // for, RFC 9110 §8.6); undici's parser fails one with a Content-Length
      // for the body it never has (it spares HEAD alone). fetch hands the
      // caller its answer all the same, yet the attempt ended with the
      // error — an errored span and a skipped retry for every "not
      // modified" — and `request()` failed outright.
      this.attempt.finish()
      this.complete()
      return
    }
    this.fail(this.attempt.reason ?? error)
  }

  /** The response ended without a body of its own (a 304 or 204 undici failed for its Content-Length). */
  protected abstract complete(): void

  protected fail(raw: unknown): void {
    if (this.errored) return
    this.errored = true
    const reason = this.attempt.reason ?? callerReason(this.attempt)
    // Thrown by the dispatcher beneath (`sendAttempt`): what it threw, as
    // createFetch gives it — classified, an undici timeout thrown there read
    // as our HeadersTimeoutError for a request never sent.
    const error = reason ?? (this.attempt.dispatchThrew ? raw : classifyError(raw, this.attempt))
    if (reason === undefined && !this.attempt.dispatchThrew && isTimeout(error)) {
      // The dispatcher's own headersTimeout / bodyTimeout fired (an Agent of
      // the caller's): stop the attempt with it, as our phase timer would,
      // so whatever listens to the attempt's stop hears the typed error —
      // createFetch's body read fails with BODY_TIMEOUT, not fetch's
      // `TypeError: terminated`.
      this.attempt.abort(error)
    } else {
      this.attempt.finish(error)
    }
    if (this.hooks.beforeError?.(error, this.responded, this.attempt)) return
    // The error ends a Node stream, answered or not: the body stream once
    // answered, and before the answer too — undici's request() destroys a
    // stream request body with it, pipeline() its Duplex. A reason a stream
    // cannot take (streamableReason) threw out of that destroy, uncaught, and
    // left pipeline's Duplex open and the Agent held.
    this.forwardError(error === reason ? streamableReason(error) : error)
  }
}

/** The attempt's handler in undici's second handler API (`onRequestStart`, `onResponse*`). */
export class AttemptHandler extends AttemptPhases implements Handler {
  readonly #inner: Handler
  #controller: Controller | undefined

  constructor(
    inner: Handler,
    attempt: Attempt,
    hooks: AttemptHandlerHooks = NO_HOOKS,
    view?: ControllerView,
  ) {
    super(attempt, hooks, view)
    this.#inner = inner
  }

  protected abortRequest(reason: Error): boolean {
    if (!this.#controller) return false
    this.#controller.abort(reason)
    return true
  }

  protected forwardError(error: unknown): void {
    const inner = this.#inner
    const scope = this.hooks.scope
    if (scope === undefined || inner.onResponseError === undefined) {
      inner.onResponseError?.(this.view, forwardedReason(error))
    } else scope.runInAsyncScope(inner.onResponseError, inner, this.view, forwardedReason(error))
  }

  onRequestStart(controller: Controller, context: unknown): void {
    const over = this.over()
    if (over !== undefined) {
      controller.abort(over) // before it is written: undici checks at once
      return
    }
    this.#controller = controller
    this.view.controller = controller
    if (this.started()) this.#inner.onRequestStart?.(this.view, context)
  }

  onRequestUpgrade(_controller: Controller, status: number, headers: never, socket: never): void {
    this.attempt.statusCode = status // the answer, as a response's status is
    this.attempt.finish()
    this.#inner.onRequestUpgrade?.(this.view, status, headers, socket)
  }

  onResponseStart(
    controller: Controller,
    status: number,
    headers: Record<string, string | string[] | undefined>,
    message?: string,
  ): void {
    if (this.errored) {
      stop(controller, this.over())
      return
    }
    if (status < 200) this.attempt.interim()
    else if (!this.headers(status, (name) => first(headers[name]))) return
    const scope = status >= 300 ? this.hooks.scope : undefined
    const inner = this.#inner
    try {
      if (scope === undefined || inner.onResponseStart === undefined) {
        inner.onResponseStart?.(this.view, status, headers, message)
      } else
        scope.runInAsyncScope(inner.onResponseStart, inner, this.view, status, headers, message)
    } catch (error) {
      // With an interceptor above ours (undici's redirect, as the README
      // composes it) the caller's stream() factory runs under it: see
      // refusedByCaller.
      if (refusedByCaller(status, error)) this.attempt.stopByCaller(error)
      throw error
    }
  }

  onResponseData(controller: Controller, chunk: Buffer): void {
    if (this.errored || this.swallow) {
      // The caller has its answer, or a retry is on its way: what streams
      // here is read for no one (undici's retry interceptor beneath resumes
      // a broken body without a new onRequestStart: this is the first we
      // hear of it, and its controller points at that request).
      if (this.errored) stop(controller, this.over())
      return
    }
    this.attempt.chunk(chunk.length)
    this.#inner.onResponseData?.(this.view, chunk)
  }

  onResponseEnd(
    _controller: Controller,
    trailers: Record<string, string | string[] | undefined>,
  ): void {
    if (this.errored || this.swallow) return
    this.attempt.finish()
    this.#end(trailers)
  }

  /** The inner handler's end, in the caller's context after an answer ≥ 300 (`scope`: a redirect is followed there). */
  #end(trailers: Record<string, string | string[] | undefined>): void {
    const scope = (this.attempt.statusCode ?? 0) >= 300 ? this.hooks.scope : undefined
    const inner = this.#inner
    if (scope === undefined || inner.onResponseEnd === undefined) {
      inner.onResponseEnd?.(this.view, trailers)
    } else scope.runInAsyncScope(inner.onResponseEnd, inner, this.view, trailers)
  }

  onResponseError(_controller: Controller, error: Error): void {
    this.error(error)
  }

  protected complete(): void {
    this.#end({})
  }
}

/**
 * The attempt's handler in undici's first handler API, over an inner handler
 * that speaks it: raw headers pass through untouched, pause is the `false`
 * that `onHeaders`/`onData` return, resume is the function `onHeaders`
 * receives. Both also pause and resume the body idle timer: a slow reader is
 * not a silent server.
 */
class LegacyAttemptHandler extends AttemptPhases implements LegacyHandler {
  readonly #inner: LegacyHandler
  #abort: ((reason?: Error) => void) | undefined
  #resume: (() => void) | undefined

  constructor(
    inner: LegacyHandler,
    attempt: Attempt,
    hooks: AttemptHandlerHooks,
    view: ControllerView | undefined,
  ) {
    super(attempt, hooks, view)
    this.#inner = inner
  }

  protected abortRequest(reason: Error): boolean {
    if (!this.#abort) return false
    this.#abort(reason)
    return true
  }

  protected forwardError(error: unknown): void {
    const inner = this.#inner
    const scope = this.hooks.scope
    if (scope === undefined || inner.onError === undefined) inner.onError?.(forwardedReason(error))
    else scope.runInAsyncScope(inner.onError, inner, forwardedReason(error))
  }

  onConnect(abort: (reason?: Error) => void, context?: unknown): void {
    const over = this.over()
    if (over !== undefined) {
      abort(over) // see over(): the request is not written
      return
    }
    this.#abort = abort
    this.view.abortRequest = abort
    if (this.started()) this.#inner.onConnect?.(this.view.abortCall, context)
  }

  onResponseStarted(): void {
    this.#inner.onResponseStarted?.()
  }

  // Each piece of the upload restarts the headers limit (Attempt.sending):
  // it bounds the server's silence, not how long the body takes to send.
  onBodySent(chunkSize: number, totalBytesSent: number): void {
    this.attempt.sending()
    this.#inner.onBodySent?.(chunkSize, totalBytesSent)
  }

  onRequestSent(): void {
    this.attempt.sending()
    this.#inner.onRequestSent?.()
  }

  onUpgrade(status: number, rawHeaders: Buffer[] | null, socket: unknown): void {
    this.attempt.statusCode = status // the answer, as a response's status is
    this.attempt.finish()
    this.#inner.onUpgrade?.(status, rawHeaders, socket)
  }

  onHeaders(status: number, rawHeaders: Buffer[], resume: () => void, statusText: string): boolean {
    if (this.errored) {
      this.#abort?.(this.over()) // read for no one: see AttemptHandler.onResponseData
      return true
    }
    if (status < 200) {
      this.attempt.interim()
    } else {
      if (!this.headers(status, (name) => rawHeader(rawHeaders, name))) return true
      this.#resume = resume
      resume = this.#resumeBody
    }
    const inner = this.#inner
    const scope = status >= 300 ? this.hooks.scope : undefined
    let more: boolean | undefined
    try {
      more =
        scope === undefined || inner.onHeaders === undefined
          ? inner.onHeaders?.(status, rawHeaders, resume, statusText)
          : scope.runInAsyncScope(inner.onHeaders, inner, status, rawHeaders, resume, statusText)
    } catch (error) {
      if (refusedByCaller(status, error)) this.attempt.stopByCaller(error)
      throw error
    }
    if (more === false && status >= 200) this.attempt.pauseBody(true)
    return more !== false
  }

  onData(chunk: Buffer): boolean {
    if (this.errored || this.swallow) {
      if (this.errored) this.#abort?.(this.over()) // see AttemptHandler.onResponseData
      return true
    }
    this.attempt.chunk(chunk.length)
    const more = this.#inner.onData?.(chunk)
    if (more === false) this.attempt.pauseBody(true)
    return more !== false
  }

  onComplete(trailers: Buffer[] | null): void {
    if (this.errored || this.swallow) return
    this.attempt.finish()
    this.#complete(trailers)
  }

  /** The inner handler's end, in the caller's context after an answer ≥ 300 (see AttemptHandler's). */
  #complete(trailers: Buffer[] | null): void {
    const scope = (this.attempt.statusCode ?? 0) >= 300 ? this.hooks.scope : undefined
    const inner = this.#inner
    if (scope === undefined || inner.onComplete === undefined) inner.onComplete?.(trailers)
    else scope.runInAsyncScope(inner.onComplete, inner, trailers)
  }

  onError(error: Error): void {
    this.error(error)
  }

  protected complete(): void {
    this.#complete([]) // no trailers, as undici passes none
  }

  /** The resume the inner handler gets: restarts the idle timer, then undici's resume. */
  readonly #resumeBody = (): void => {
    this.attempt.pauseBody(false)
    this.#resume?.()
  }
}

/**
 * The controller the inner handler sees. It follows the current attempt (one
 * view across retries), and its pause/resume also pause the body idle timer:
 * a slow reader is not a silent server.
 */
export class ControllerView implements Controller {
  /** The attempt's controller, when the inner handler speaks undici's second API. */
  controller: Controller | undefined
  /** The attempt's abort, when it speaks the first. */
  abortRequest: ((reason?: Error) => void) | undefined
  attempt: Attempt | undefined
  readonly #call: { stop(reason: Error): void } | undefined
  #abortCall: ((reason?: Error) => void) | undefined

  /** `call`: told when the caller aborts the whole call (it also ends a pending retry). */
  constructor(call?: { stop(reason: Error): void }) {
    this.#call = call
  }

  get aborted(): boolean {
    return this.controller?.aborted ?? this.attempt?.reason !== undefined
  }
  get paused(): boolean {
    return this.controller?.paused ?? false
  }
  get reason(): Error | null {
    return this.controller?.reason ?? null
  }
  abort(reason: Error): void {
    if (this.#call !== undefined) {
      // The caller's own handler stops the request (undici's `request()`:
      // its body destroyed, its signal aborted): the attempt's end says so,
      // unless that signal handed on the deadline's end (`stopByCaller`).
      // createFetch's view (no call) is also undici's fetch stopping a
      // request that failed (a corrupt encoding): it is told by its body.
      // Not its stop when it is undici refusing the upstream's answer
      // midway (an interceptor above ours: decompress's corrupt or
      // oversized body): the upstream's failure, as at its headers
      // (`refusedByCaller`). Either way the call ends: an abort from above
      // between attempts (a pending Retry-After wait) must send no retry.
      if (!refusesUpstream(reason)) this.attempt?.stopByCaller(reason)
      this.#call.stop(reason)
    }
    // The request in flight, through whichever handler API it speaks, even
    // when its attempt is already over: createFetch ends a retried answer's
    // attempt before it cancels the body, and that cancel must still close
    // the socket (undici ignores an abort of a request that completed). An
    // attempt still waiting for its connection is stopped directly.
    if (this.controller) this.controller.abort(reason)
    else if (this.abortRequest) this.abortRequest(reason)
    else this.attempt?.abort(reason)
  }
  pause(): void {
    this.attempt?.pauseBody(true)
    this.controller?.pause()
  }
  resume(): void {
    this.attempt?.pauseBody(false)
    this.controller?.resume()
  }

  /** `abort` as the function undici's first handler API passes to `onConnect` (one per call, across retries). */
  get abortCall(): (reason?: Error) => void {
    this.#abortCall ??= (reason) => this.abort(abortReason(reason))
    return this.#abortCall
  }
}

/**
 * The reason undici hands `abort`, as the attempt reads it: none is undici's
 * own `RequestAbortedError`, as undici makes it for an abort with no reason
 * (`stream()` and `pipeline()` call it so for an EventEmitter `signal`, a
 * body destroyed calls it so): a `DOMException` here reached the caller's
 * handler in its place, where code matching undici's error (`UND_ERR_ABORTED`)
 * missed it. A Response `clone()`d reads its body through a tee, and the
 * tee cancels the body beneath once both copies are cancelled, with both
 * reasons as one array (`[the original's, the clone's]`, the streams spec's
 * composite reason): read as it came, the attempt ended `UNKNOWN` where a
 * plain cancel says `AbortError` or its reason's class. So it is the
 * original's reason, else the clone's, else the `AbortError` fetch makes for
 * a cancel with no reason. Only on an abort, never on a call's normal path.
 */
function abortReason(reason: unknown): Error {
  if (isPair(reason)) {
    return (reason[0] ??
      reason[1] ??
      new DOMException('This operation was aborted', 'AbortError')) as Error
  }
  return forwardedReason(reason)
}

/** A composite reason of two; never throws (`Array.isArray` does on a revoked Proxy, a caller's reason passed on). */
function isPair(reason: unknown): reason is [unknown, unknown] {
  try {
    return Array.isArray(reason) && reason.length === 2
  } catch {
    return false
  }
}

/** Abort a request whose answer is read for no one (once: undici ignores a second abort). */
function stop(controller: Controller, reason: Error | undefined): void {
  if (!controller.aborted) controller.abort(reason ?? new Error('this attempt is over'))
}

/** The first value of a raw header (undici's flat `[name, value, …]` buffers), by lower-case name. */
function rawHeader(rawHeaders: Buffer[], name: string): string | undefined {
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const key = rawHeaders[i]
    if (key && key.length === name.length && key.toString('latin1').toLowerCase() === name) {
      return rawHeaders[i + 1]?.toString('latin1')
    }
  }
  return undefined
}

function first(value: unknown): string | undefined {
  if (Array.isArray(value)) return value[0] === undefined ? undefined : String(value[0])
  return value === undefined || value === null ? undefined : String(value)
}

/**
 * The caller's reason when its signal has aborted but the attempt has not
 * heard it yet: undici's `request()` listens to the same signal from before
 * the dispatch, so its listener runs first and destroys the body, whose
 * abort reaches us reasonless (an `AbortError`) before the attempt's own
 * listener runs. The caller gets its reason from undici; the attempt's end
 * (its event, the egress span's `error.type`) must say the same.
 */
function callerReason(attempt: Attempt): unknown {
  const signal = attempt.init.signal
  return signal?.aborted === true ? signal.reason : undefined
}

/**
 * undici's error for a 304 or 204 that gave a Content-Length (it counts the
 * body such an answer never has): the answer ended whole, no body read.
 */
function bodilessAnswer(error: Error, attempt: Attempt): boolean {
  return (
    (attempt.statusCode === 304 || attempt.statusCode === 204) &&
    attempt.bytesReceived === 0 &&
    (error as { code?: unknown }).code === 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH'
  )
}

/** A headers or body timeout (ours, or undici's classified as ours). */
function isTimeout(error: unknown): boolean {
  return error instanceof HeadersTimeoutError || error instanceof BodyTimeoutError
}

/** The statuses undici's redirect interceptor follows, and throws its refusals at. */
const REDIRECTS = new Set([300, 301, 302, 303, 307, 308])

/**
 * Whether what a handler above ours threw at an answer is the caller
 * refusing it. The handler of undici's own API runs the caller's code there
 * — stream()'s factory, pipeline()'s handler — and undici stops the request
 * with what it throws: as a Writable of the caller's that fails at once, a
 * caller's stop (no retry-skipped, `stoppedBy`), where it was judged the
 * upstream's failure. Not at a 1xx (request()'s onInfo: before any answer),
 * nor at a redirect, where undici's redirect interceptor above throws its
 * own refusals of the upstream's answer (a Location that is no URL, a loop,
 * one hop too many), nor undici refusing the upstream's answer
 * (`refusesUpstream`).
 */
function refusedByCaller(status: number, error: unknown): boolean {
  if (status < 200 || REDIRECTS.has(status)) return false
  return !refusesUpstream(error)
}

/**
 * undici, or an interceptor of its above ours, refusing the upstream's
 * answer — judged the upstream's failure, whether it throws at the headers
 * or aborts midway: its own errors (`UND_ERR_*`, but a caller's bare abort,
 * `UND_ERR_ABORTED`, and `UND_ERR_INVALID_RETURN_VALUE`, a caller's factory
 * that returned no stream), an invalid URL's `ERR_INVALID_URL`, a decoder's
 * failure (zlib's `Z_*`, brotli's `ERR__*`, zstd's `ZSTD_*` on Node 22+), and the plain
 * Errors of decompress ("too many content-encodings") and redirect ("max
 * redirects", at the answer after the last hop allowed, whatever its status).
 */
function refusesUpstream(error: unknown): boolean {
  const code = errorCode(error)
  if (code === 'UND_ERR_ABORTED' || code === 'UND_ERR_INVALID_RETURN_VALUE') return false
  if (code.startsWith('UND_ERR') || code.startsWith('Z_') || code.startsWith('ERR__')) return true
  if (code.startsWith('ZSTD_')) return true
  if (code === 'ERR_INVALID_URL') return true
  const message = messageOf(error)
  return message.startsWith('too many content-encodings') || message === 'max redirects'
}
