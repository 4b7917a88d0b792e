import type { Dispatcher } from 'undici'
import type { Attempt } from './Attempt.js'
import { classifyError } from './classifyError.js'

type Handler = Dispatcher.DispatchHandler
type Controller = Dispatcher.DispatchController

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
  beforeResponse?(status: number, headers: Record<string, unknown>, attempt: Attempt): boolean
  /** Whether to forward `onRequestStart` (a retry must not hand the inner handler a second start). */
  forwardRequestStart?(): boolean
}

const NO_HOOKS: AttemptHandlerHooks = {}

/**
 * Wraps an undici handler to drive an `Attempt` through its phases: headers
 * from the moment the request is written, body from the first byte, idle gaps
 * between chunks, and a stop on the deadline or the caller's signal — even
 * while the request still waits for its connection.
 */
export class AttemptHandler implements Handler {
  readonly #inner: Handler
  readonly #attempt: Attempt
  readonly #hooks: AttemptHandlerHooks
  #controller: Controller | undefined
  #errored = false
  #swallow = false
  #responded = false
  readonly #view: ControllerView

  constructor(
    inner: Handler,
    attempt: Attempt,
    hooks: AttemptHandlerHooks = NO_HOOKS,
    view?: ControllerView,
  ) {
    this.#inner = inner
    this.#attempt = attempt
    this.#hooks = hooks
    this.#view = view ?? new ControllerView()
    this.#view.attempt = attempt
    this.#view.controller = undefined
    attempt.onAbort((reason) => {
      const controller = this.#controller
      if (controller) controller.abort(asError(reason))
      else this.#fail(reason) // still waiting for a socket: answer now, drop what comes later
    })
  }

  onRequestStart(controller: Controller, context: unknown): void {
    this.#controller = controller
    this.#view.controller = controller
    if (this.#attempt.reason !== undefined) {
      controller.abort(asError(this.#attempt.reason))
      return
    }
    this.#attempt.enter('headers')
    if (this.#hooks.forwardRequestStart?.() ?? true)
      this.#inner.onRequestStart?.(this.#view, context)
  }

  onRequestUpgrade(_controller: Controller, status: number, headers: never, socket: never): void {
    this.#attempt.finish()
    this.#inner.onRequestUpgrade?.(this.#view, status, headers, socket)
  }

  onResponseStart(
    controller: Controller,
    status: number,
    headers: Record<string, string | string[] | undefined>,
    message?: string,
  ): void {
    if (this.#errored) return
    if (status < 200) {
      this.#inner.onResponseStart?.(this.#view, status, headers, message)
      return
    }
    this.#attempt.statusCode = status
    this.#attempt.enter('body')
    if (this.#hooks.beforeResponse?.(status, headers, this.#attempt)) {
      this.#swallow = true
      controller.abort(new Error('retrying'))
      return
    }
    this.#responded = true
    this.#inner.onResponseStart?.(this.#view, status, headers, message)
  }

  onResponseData(_controller: Controller, chunk: Buffer): void {
    if (this.#errored || this.#swallow) return
    this.#attempt.chunk(chunk.length)
    this.#inner.onResponseData?.(this.#view, chunk)
  }

  onResponseEnd(
    _controller: Controller,
    trailers: Record<string, string | string[] | undefined>,
  ): void {
    if (this.#errored || this.#swallow) return
    this.#attempt.finish()
    this.#inner.onResponseEnd?.(this.#view, trailers)
  }

  onResponseError(_controller: Controller, error: Error): void {
    if (this.#swallow) {
      this.#attempt.finish()
      return
    }
    this.#fail(this.#attempt.reason ?? error)
  }

  #fail(raw: unknown): void {
    if (this.#errored) return
    this.#errored = true
    const error = this.#attempt.reason ?? classifyError(raw, this.#attempt)
    this.#attempt.finish(error)
    if (this.#hooks.beforeError?.(error, this.#responded, this.#attempt)) return
    this.#inner.onResponseError?.(this.#view, asError(error))
  }
}

/**
 * The controller the inner handler sees. It follows the current attempt (one
 * view across retries), and its pause/resume also pause the body idle timer:
 * a slow reader is not a silent server.
 */
export class ControllerView implements Controller {
  controller: Controller | undefined
  attempt: Attempt | undefined
  readonly #call: { stop(reason: Error): void } | undefined

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
    this.#call?.stop(reason)
    if (this.controller && !this.attempt?.done) this.controller.abort(reason)
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
}

function asError(reason: unknown): Error {
  return reason instanceof Error ? reason : new Error(String(reason), { cause: reason })
}
