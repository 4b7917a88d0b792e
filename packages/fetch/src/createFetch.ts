import { currentDeadline, type Deadline } from '@hourglass/core'
import {
  Agent,
  type Dispatcher,
  type RequestInfo,
  type RequestInit,
  type Response,
  Request as UndiciRequest,
  fetch as undiciFetch,
} from 'undici'
import type { Attempt } from './Attempt.js'
import { type CallContext, callStorage } from './callStorage.js'
import { type ConnectorOptions, createConnector } from './createConnector.js'
import { deadlineInterceptor } from './deadlineInterceptor.js'
import { decideRetry, type Outcome } from './decideRetry.js'
import { hasHeader, isRepeatable } from './dispatchHeaders.js'
import { eventUrl, publishRetry, publishRetrySkipped } from './events.js'
import { noBudgetError } from './noBudgetError.js'
import { mergeRetry, type RetryOptions, resolveOptions } from './options.js'
import { sleep } from './sleep.js'

export interface CreateFetchOptions extends ConnectorOptions {
  /**
   * The dispatcher to send through; default a new undici `Agent` with
   * `createConnector(options)`. A dispatcher of your own keeps its own connect
   * logic, so the DNS and connect phases are then bounded by the deadline only.
   */
  dispatcher?: Dispatcher
}

export interface HourglassRequestInit extends RequestInit {
  /** The deadline of this call; default `currentDeadline()`. */
  deadline?: Deadline
  /** Retry rules for this call, field by field over the factory's; `false` = no retry. */
  retry?: RetryOptions | false
}

/** A WHATWG `fetch` that carries and enforces the deadline. */
export interface HourglassFetch {
  (input: RequestInfo, init?: HourglassRequestInit): Promise<Response>
  /** The composed dispatcher (with the deadline interceptor). */
  readonly dispatcher: Dispatcher
  /** Close the connections this fetch opened (only the Agent it created itself). */
  close(): Promise<void>
}

/** @internal Lets `probe` see each attempt's phase timings. */
export interface FetchHooks {
  onAttempt?: (attempt: Attempt) => void
}

/**
 * `fetch` on undici that takes `init.deadline` (else the current one), sends
 * what is left in `x-deadline-remaining-ms`, bounds DNS, connect, headers and
 * body idle by `min(limit, time left)`, and retries only on evidence. The
 * Response's body keeps honouring the deadline while it is read.
 */
export function createFetch(
  options: CreateFetchOptions = {},
  hooks: FetchHooks = {},
): HourglassFetch {
  const config = resolveOptions(options)
  const own = options.dispatcher ? undefined : new Agent({ connect: createConnector(options) })
  const dispatcher = (options.dispatcher ?? own!).compose(deadlineInterceptor(options))

  const call = async (input: RequestInfo, init: HourglassRequestInit = {}): Promise<Response> => {
    const { deadline: explicit, retry, signal: callerSignal, ...rest } = init
    const deadline = explicit ?? currentDeadline()
    const signal = callerSignal ?? undefined
    const request = input instanceof UndiciRequest ? input : undefined
    const method = (rest.method ?? request?.method ?? 'GET').toUpperCase()
    const target = new URL(request ? request.url : String(input))
    const url = eventUrl(target.origin, target.pathname)
    const used = new Set<string>()
    const policy = mergeRetry(config.retry, retry)
    const repeatable = isRepeatable(
      method,
      hasHeader(rest.headers ?? request?.headers, 'idempotency-key')
        ? { 'idempotency-key': '' }
        : {},
    )
    const body = rest.body
    const replayable =
      !request?.body &&
      !(body && typeof body === 'object' && ('getReader' in body || Symbol.asyncIterator in body))
    const base = { deadline, method, url }
    const state = {
      retry: policy,
      repeatable,
      replayable,
      used,
      deadline,
      minBudgetMs: config.minBudgetMs,
    }
    /** Decide on the evidence and publish the decision: the wait before the next attempt, or undefined for none. */
    const retryDelay = (outcome: Outcome, number: number): number | undefined => {
      const decision = decideRetry(outcome, state)
      if (!decision.retry) {
        if (decision.reason !== undefined) {
          publishRetrySkipped(() => ({
            ...base,
            attempt: number,
            reason: decision.reason,
            why: decision.why,
          }))
        }
        return undefined
      }
      used.add(decision.rule)
      publishRetry(() => ({
        ...base,
        attempt: number + 1,
        reason: decision.reason,
        delayMs: decision.delayMs,
      }))
      return decision.delayMs
    }

    for (let number = 1; ; number++) {
      if (signal?.aborted) throw signal.reason
      const refused = noBudgetError(deadline, config.minBudgetMs)
      if (refused !== undefined) throw refused
      const controller = new AbortController()
      let attempt: Attempt | undefined
      const context: CallContext = {
        deadline,
        signal,
        method,
        url,
        number,
        onAttempt(next) {
          attempt = next
          next.onAbort((reason) => controller.abort(reason))
          if (hooks.onAttempt) next.onFinish(hooks.onAttempt)
        },
      }
      let outcome: Outcome
      try {
        const response = await callStorage.run(context, () =>
          undiciFetch(request ? request.clone() : input, {
            ...rest,
            signal: controller.signal,
            dispatcher,
          }),
        )
        outcome = {
          status: response.status,
          header: (name) => response.headers.get(name),
          bytesReceived: 0,
        }
        const delayMs = retryDelay(outcome, number)
        if (delayMs === undefined) {
          // A failure while the body is read is past the first byte: never retried, but said so.
          attempt?.onFinish((ended) => {
            if (ended.error === undefined) return
            const reason = codeOf(ended.error)
            publishRetrySkipped(() => ({
              ...base,
              attempt: number,
              reason,
              why: 'after-first-byte',
            }))
          })
          return response
        }
        await response.body?.cancel()
        if (delayMs > 0) await sleep(delayMs, deadline, signal)
      } catch (thrown) {
        const error = attempt?.reason ?? attempt?.error ?? unwrap(thrown)
        attempt?.finish(error)
        if (signal?.aborted) throw signal.reason
        const delayMs = retryDelay({ error, bytesReceived: attempt?.bytesReceived ?? 0 }, number)
        if (delayMs === undefined) throw error
        if (delayMs > 0) await sleep(delayMs, deadline, signal)
      }
    }
  }

  return Object.assign(call, {
    dispatcher,
    close: async () => {
      await own?.close()
    },
  })
}

function codeOf(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code
  return typeof code === 'string' ? code : error instanceof Error ? error.name : 'UNKNOWN'
}

/** undici's fetch wraps network errors as `TypeError('fetch failed', { cause })`. */
function unwrap(error: unknown): unknown {
  if (error instanceof TypeError && error.cause !== undefined) return error.cause
  return error
}
