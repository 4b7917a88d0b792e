import { currentDeadline, type Deadline } from '@hourglass/core'
import type { Dispatcher } from 'undici'
import type { Attempt } from './Attempt.js'
import { AttemptHandler, ControllerView } from './AttemptHandler.js'
import { eventUrl } from './channels.js'
import { dispatchHasHeader, isRepeatable } from './dispatchHeaders.js'
import { OutboundCall as Call, type OutboundCall } from './OutboundCall.js'
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
  /** Told the attempt once it exists (createFetch reads its bytes and reason). */
  started(attempt: Attempt): void
}

type Opts = Dispatcher.DispatchOptions &
  DeadlineDispatchOptions & { [FETCH_ATTEMPT]?: FetchAttempt | undefined }

/**
 * The behaviour of `createFetch` as an undici interceptor, for code that uses
 * undici directly: `new Agent({ connect: createConnector(opts) }).compose(deadlineInterceptor(opts))`.
 * Propagates the deadline header, bounds the headers and body phases (the
 * connector bounds DNS and connect), and retries on evidence — only bodies
 * that can be sent twice (none, string, bytes) — through the same retry loop
 * as `createFetch` (`OutboundCall`).
 */
export function deadlineInterceptor(
  options: EgressOptions = {},
): Dispatcher.DispatcherComposeInterceptor {
  return interceptorFor(resolveOptions(options))
}

/** The interceptor over options already resolved (createFetch resolves them once for agent, connector and interceptor). */
export function interceptorFor(config: ResolvedOptions): Dispatcher.DispatcherComposeInterceptor {
  return (dispatch) => (opts: Opts, handler) => {
    const fetchAttempt = opts[FETCH_ATTEMPT]
    if (fetchAttempt) {
      // createFetch drives this call and its retries: one attempt here.
      const attempt = fetchAttempt.call.attempt(fetchAttempt.number)
      fetchAttempt.started(attempt)
      return sendAttempt(dispatch, opts, new AttemptHandler(handler, attempt, {}), attempt)
    }
    const method = opts.method.toUpperCase()
    const body = opts.body
    const call = new Call({
      config,
      deadline: opts.deadline ?? currentDeadline(),
      signal: undefined,
      method,
      get url() {
        return eventUrl(String(opts.origin ?? ''), opts.path)
      },
      retry: mergeRetry(config.retry, opts.retry),
      repeatable: () => isRepeatable(method, dispatchHasHeader(opts.headers, 'idempotency-key')),
      replayable: body == null || typeof body === 'string' || body instanceof Uint8Array,
    })
    // One view across attempts: the caller's abort (undici.request's signal
    // calls it) reaches the attempt in flight, or ends a pending retry wait.
    const view = new ControllerView((reason) => call.stop(reason))
    let started = false
    let answered = false
    call.drive(
      (number, settle) => {
        const attempt = call.attempt(number)
        const decide = (delayMs: number | undefined): boolean => {
          if (delayMs === undefined) answered = true
          settle(delayMs)
          return delayMs !== undefined
        }
        const attemptHandler = new AttemptHandler(
          handler,
          attempt,
          {
            forwardRequestStart: () => {
              if (started) return false
              started = true
              return true
            },
            beforeError: (error, responded) =>
              decide(
                call.judge(
                  { error, afterHeaders: responded, bytesReceived: attempt.bytesReceived },
                  number,
                ),
              ),
            beforeResponse: (status, headers) =>
              decide(
                call.judge(
                  { status, header: (name) => first(headers[name]), bytesReceived: 0 },
                  number,
                ),
              ),
          },
          view,
        )
        sendAttempt(dispatch, opts, attemptHandler, attempt)
      },
      (error) => {
        // Refused before a send (no budget), or stopped between attempts: the
        // caller has had no answer yet, so this is it.
        if (!answered) queueMicrotask(() => handler.onResponseError?.(view, asError(error)))
      },
    )
    return true
  }
}

function first(value: unknown): string | undefined {
  if (Array.isArray(value)) return value[0] === undefined ? undefined : String(value[0])
  return value === undefined || value === null ? undefined : String(value)
}

function asError(reason: unknown): Error {
  return reason instanceof Error ? reason : new Error(String(reason), { cause: reason })
}
