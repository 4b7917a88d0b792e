import { currentDeadline, type Deadline, systemClock } from '@hourglass/core'
import type { Dispatcher } from 'undici'
import { Attempt } from './Attempt.js'
import { AttemptHandler, ControllerView } from './AttemptHandler.js'
import { callStorage } from './callStorage.js'
import { decideRetry, type Outcome } from './decideRetry.js'
import { isRepeatable, withDeadlineHeader } from './dispatchHeaders.js'
import { eventUrl, publishRetry, publishRetrySkipped } from './events.js'
import { noBudgetError } from './noBudgetError.js'
import {
  type EgressOptions,
  mergeRetry,
  type ResolvedOptions,
  type RetryOptions,
  resolveOptions,
} from './options.js'
import { sendAttempt } from './sendAttempt.js'

/** Extra dispatch options the interceptor reads (cast them in: undici's types do not list them). */
export interface DeadlineDispatchOptions {
  /** The deadline of this request; default `currentDeadline()`. */
  deadline?: Deadline
  /** This request's retry rules, field by field over the interceptor's; `false` = none. */
  retry?: RetryOptions | false
}

/**
 * The behaviour of `createFetch` as an undici interceptor, for code that uses
 * undici directly: `new Agent({ connect: createConnector(opts) }).compose(deadlineInterceptor(opts))`.
 * Propagates the deadline header, bounds the headers and body phases (the
 * connector bounds DNS and connect), and retries on evidence — only bodies
 * that can be sent twice (none, string, bytes).
 */
export function deadlineInterceptor(
  options: EgressOptions = {},
): Dispatcher.DispatcherComposeInterceptor {
  const config = resolveOptions(options)
  return (dispatch) => (opts, handler) => {
    const call = callStorage.getStore()
    if (call) {
      // createFetch drives this call and does its own retries.
      const attempt = new Attempt({
        deadline: call.deadline,
        signal: call.signal,
        limits: config,
        clock: config.clock ?? call.deadline?.clock ?? systemClock,
        method: call.method,
        url: call.url,
        number: call.number,
      })
      call.onAttempt(attempt)
      return sendAttempt(dispatch, opts, new AttemptHandler(handler, attempt, {}), attempt)
    }
    return new DirectCall(
      config,
      dispatch,
      opts as Dispatcher.DispatchOptions & DeadlineDispatchOptions,
      handler,
    ).start()
  }
}

class DirectCall {
  readonly #config: ResolvedOptions
  readonly #dispatch: Dispatcher.Dispatch
  readonly #opts: Dispatcher.DispatchOptions & DeadlineDispatchOptions
  readonly #handler: Dispatcher.DispatchHandler
  readonly #deadline: Deadline | undefined
  readonly #view = new ControllerView()
  readonly #used = new Set<string>()
  readonly #method: string
  readonly #url: string
  #number = 0
  #started = false

  constructor(
    config: ResolvedOptions,
    dispatch: Dispatcher.Dispatch,
    opts: Dispatcher.DispatchOptions & DeadlineDispatchOptions,
    handler: Dispatcher.DispatchHandler,
  ) {
    this.#config = config
    this.#dispatch = dispatch
    this.#opts = opts
    this.#handler = handler
    this.#deadline = opts.deadline ?? currentDeadline()
    this.#method = opts.method.toUpperCase()
    this.#url = eventUrl(String(opts.origin ?? ''), opts.path)
  }

  start(): boolean {
    const refused = noBudgetError(this.#deadline, this.#config.minBudgetMs)
    if (refused !== undefined) {
      queueMicrotask(() => this.#handler.onResponseError?.(this.#view, refused as Error))
      return true
    }
    return this.#send()
  }

  #send(): boolean {
    this.#number++
    const deadline = this.#deadline
    const attempt = new Attempt({
      deadline,
      signal: undefined,
      limits: this.#config,
      clock: this.#config.clock ?? deadline?.clock ?? systemClock,
      method: this.#method,
      url: this.#url,
      number: this.#number,
    })
    const handler = new AttemptHandler(
      this.#handler,
      attempt,
      {
        forwardRequestStart: () => {
          if (this.#started) return false
          this.#started = true
          return true
        },
        beforeError: (error, responded) =>
          this.#retry({ error, afterHeaders: responded, bytesReceived: attempt.bytesReceived }),
        beforeResponse: (status, headers) =>
          this.#retry({
            status,
            header: (name) => first(headers[name]),
            bytesReceived: 0,
            afterHeaders: false,
          }),
      },
      this.#view,
    )
    return sendAttempt(this.#dispatch, this.#opts, handler, attempt)
  }

  #retry(outcome: Outcome): boolean {
    const body = this.#opts.body
    const decision = decideRetry(outcome, {
      retry: mergeRetry(this.#config.retry, this.#opts.retry),
      repeatable: isRepeatable(
        this.#method,
        withDeadlineHeader(this.#opts.headers, undefined).headers,
      ),
      replayable: body == null || typeof body === 'string' || body instanceof Uint8Array,
      used: this.#used,
      deadline: this.#deadline,
      minBudgetMs: this.#config.minBudgetMs,
    })
    const base = { deadline: this.#deadline, method: this.#method, url: this.#url }
    if (decision.reason === undefined) return false
    if (!decision.retry) {
      publishRetrySkipped(() => ({
        ...base,
        attempt: this.#number,
        reason: decision.reason,
        why: decision.why,
      }))
      return false
    }
    this.#used.add(decision.rule)
    publishRetry(() => ({
      ...base,
      attempt: this.#number + 1,
      reason: decision.reason,
      delayMs: decision.delayMs,
    }))
    const clock = this.#config.clock ?? this.#deadline?.clock ?? systemClock
    if (decision.delayMs > 0) clock.setTimeout(() => this.#send(), decision.delayMs)
    else queueMicrotask(() => this.#send())
    return true
  }
}

function first(value: unknown): string | undefined {
  if (Array.isArray(value)) return value[0] === undefined ? undefined : String(value[0])
  return value === undefined || value === null ? undefined : String(value)
}
