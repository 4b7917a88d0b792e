import { randomUUID } from 'node:crypto'
import { systemClock, untilEnded } from '@hourglass/core'
import { defaultAdmissionFor } from '../admission/defaultAdmission.js'
import { idempotencyKey as deriveKey } from '../agent/idempotencyKey.js'
import type { ModelFailure } from '../errors/ModelFailure.js'
import { isModelUnavailable, ModelUnavailableError } from '../errors/ModelUnavailableError.js'
import { isProviderError, type ProviderError } from '../errors/ProviderError.js'
import {
  isRateLimited,
  type RateLimitedError,
  restatedRefusal,
} from '../errors/RateLimitedError.js'
import { isRequestRejected, RequestRejectedError } from '../errors/RequestRejectedError.js'
import { defaultRetryBudgets } from '../retry/defaultRetryBudgets.js'
import type { ChatRequest, ChatResponse } from '../types.js'
import type { CallModelOptions, MessageReducer } from './CallModelOptions.js'
import type { CallState } from './CallState.js'
import { callDeadline, shadowAmbientIfFalse } from './callDeadline.js'
import { checkCallOptions, checkMessages } from './checkCallOptions.js'
import { createModelStream, type ModelStream, type StreamSink } from './ModelStream.js'
import { outputCapOverLimit } from './outputCapOverLimit.js'
import { raiseCapBeforeToken } from './raiseCapBeforeToken.js'
import { type Answered, recoverOutputLimit } from './recoverOutputLimit.js'
import { runModels } from './runModels.js'
import { type TooBig, tooBig } from './tooBig.js'

/**
 * One model call under the policy: every failure classified by the
 * provider's dialect, retried only when transient and only when the wait
 * fits the deadline, within the retry and cost budgets, down the fallback
 * list — and, for prompts too long or answers cut at the cap, recovered in
 * layers before anything surfaces.
 *
 * Safe by default: without `limits.admission` / `retry.budgets`, every call
 * of the process shares one `Admission` (cooldowns per provider + base URL +
 * key) and one retry budget per provider; `false` turns either off.
 *
 * `request.stream: true` returns a `ModelStream` (iterate it; `result` is
 * the whole answer); otherwise a promise of the answer.
 */
export function callModel(options: CallModelOptions & { request: { stream: true } }): ModelStream
export function callModel(options: CallModelOptions): Promise<ChatResponse>
export function callModel(options: CallModelOptions): Promise<ChatResponse> | ModelStream {
  try {
    checkCallOptions(options)
  } catch (refused) {
    // Refused before anything is sent, and reported where every other
    // failure of the call is: the promise, or the stream's result.
    return asksForStream(options)
      ? createModelStream(() => Promise.reject(refused))
      : Promise.reject(refused)
  }
  // `false`: none, not even the ambient one, for the layers below too.
  return shadowAmbientIfFalse(options.deadline, () => start(options))
}

function start(given: CallModelOptions): Promise<ChatResponse> | ModelStream {
  // `signal: null` is none, as every option reads null: passed on, it failed
  // deep inside ("Cannot read properties of null"), or as Admission's.
  const options = given.signal === null ? { ...given, signal: undefined } : given
  const key = options.idempotencyKey ?? randomUUID()
  if (options.request.stream === true) {
    return createModelStream((sink) => {
      const state = callState(options, sink.signal)
      // An answer cut at the cap before the consumer read a token is asked
      // again with the cap raised, as a call not streamed is; past a token, never.
      return raiseCapBeforeToken(sink, options.request, state.recovery, (request, to, step) =>
        step === undefined
          ? complete(state, request, key, to)
          : complete(state, request, deriveKey({ operation: key, step }), to, false),
      )
    }, options.signal)
  }
  const state = callState(options, options.signal)
  return (async () => {
    const first = await complete(state, options.request, key, undefined)
    // From the request answered: shrunk, if the prompt was too long.
    return recoverOutputLimit(
      first.response,
      first.request,
      state.recovery,
      (request, step) =>
        // A continuation is a new operation (a different request): its own key,
        // derived from this one. A raised cap refused as too long for the
        // context window is the cap's doing, not the prompt's, which fitted:
        // the history is not shrunk (collapse, a paid compaction) for it.
        complete(
          state,
          request,
          deriveKey({ operation: key, step }),
          undefined,
          !step.endsWith(':raise-cap'),
        ),
      () => state.attempts,
    )
  })()
}

/**
 * Whether refused options asked for a stream. Read once more, after a
 * refusal: a getter that threw then would throw out of `callModel` itself,
 * where the caller expects a promise or a stream.
 */
function asksForStream(options: CallModelOptions): boolean {
  try {
    return options?.request?.stream === true
  } catch {
    return false
  }
}

/** What the call's models, attempts and recovery steps share; `signal` stops it. */
function callState(options: CallModelOptions, signal: AbortSignal | undefined): CallState {
  const deadline = callDeadline(options.deadline)
  const clock = deadline?.clock ?? systemClock
  return {
    options,
    deadline,
    signal,
    clock,
    startedAt: clock.now(),
    retry: options.retry ?? {},
    recovery: options.recovery ?? {},
    admission:
      options.limits?.admission === false
        ? undefined
        : (options.limits?.admission ?? defaultAdmissionFor(clock)),
    retryBudgets:
      options.retry?.budgets === false
        ? undefined
        : (options.retry?.budgets ?? defaultRetryBudgets()),
    attempts: 0,
    costUsd: 0,
  }
}

/**
 * One full call of `request`, with the prompt_too_long layers: the caller's
 * `collapse`, then its `compact`, then the refusal surfaces. A request every
 * model refused as bigger than its whole limit (`request_too_large`: each
 * was tried, as a fallback) is shrunk the same way — a smaller request is
 * what every such refusal asks for. The answer comes with the request it
 * answered, for the `max_tokens` recovery to go on from.
 */
async function complete(
  state: CallState,
  request: ChatRequest,
  key: string,
  sink: StreamSink | undefined,
  mayShrink = true,
): Promise<Answered> {
  const reducers: Array<[string, MessageReducer]> = []
  const { collapse, compact } = state.recovery
  if (collapse) reducers.push(['collapse', collapse])
  if (compact) reducers.push(['compact', compact])
  const done: string[] = []
  // The models each refused pass tried: the error that ends the call names them all.
  const tried: ModelFailure[] = []
  let current = request
  for (;;) {
    try {
      const response = await runModels(
        state,
        current,
        done.length === 0 ? key : deriveKey({ operation: key, step: done.join('/') }),
        sink,
      )
      return { response, request: current }
    } catch (error) {
      const refused = tooBig(error)
      if (refused === undefined) throw error
      // The prompt fitted the context window; the raised cap beside it did
      // not: not shrunk (collapse, a paid compaction) for the cap's sake. So
      // too a raised cap admission refused as larger than a whole TPM limit,
      // alone or beside other models' failures: the prompt fitted at the cap
      // accepted, and the recovery drops the step. Shrunk for it, collapse
      // and compact ran, then again for the continuation (four calls for
      // two). A provider's own "Request too large", sent, is shrunk as ever.
      if (!mayShrink && (isRequestRejected(refused) || refusedByAdmission(refused))) {
        throw refused
      }
      // The output cap alone over the limit: no step can shrink the request
      // under it. Said only when a step is skipped for it: with none left to
      // run, the refusal is as it was.
      const step = reducers[done.length]
      const capOver =
        step === undefined ? undefined : outputCapOverLimit(refused, current.maxTokens)
      const next = capOver === undefined ? step : undefined
      if (next === undefined) {
        if (done.length === 0 && capOver === undefined) throw refused
        if (isRateLimited(refused)) throw withEarlierPasses(refused, tried, done, capOver)
        throw isRequestRejected(refused)
          ? new RequestRejectedError({
              error: refused.cause as ProviderError,
              attempts: refused.attempts,
              causes: [...tried, ...refused.causes],
              recoveries: done,
            })
          : new ModelUnavailableError({
              attempts: refused.attempts,
              causes: [...tried, ...refused.causes],
              lastCause: refused.lastCause,
              reason: endedReason(refused.reason, done, capOver),
            })
      }
      tried.push(...refused.causes)
      const [name, reduce] = next
      done.push(name)
      current = { ...current, messages: await shrink(state, name, reduce, current.messages) }
    }
  }
}

/**
 * A size refusal admission made before sending (`ProviderLimits`' TPM: a
 * `RateLimitedError`, or one among the causes of a list's error).
 */
function refusedByAdmission(refused: TooBig): boolean {
  if (isRateLimited(refused)) return true
  if (!isModelUnavailable(refused)) return false
  // Not when a provider refused it as too large itself, sent: that is shrunk
  // as ever (a fallback admission turned away beside it stopped A's 413
  // from being shrunk for, and the step was neither shrunk nor dropped).
  const sentTooLarge = refused.causes.some(
    (c) => isProviderError(c.cause) && c.cause.kind === 'request_too_large',
  )
  return (
    !sentTooLarge &&
    refused.causes.some((c) => isRateLimited(c.cause) && c.cause.kind === 'request_too_large')
  )
}

/**
 * One recovery step's smaller history. The step is the caller's code (often
 * a summarising model call) and runs inside the call: it is bounded by the
 * call's deadline and signal like every other wait — a step that never
 * settled held the call past its deadline for good. What it returns is
 * checked as the request's own messages are: a non-array or a null message
 * went out as a `TypeError` from deep inside a request builder, or was sent.
 */
async function shrink(
  state: CallState,
  name: string,
  reduce: MessageReducer,
  messages: ChatRequest['messages'],
): Promise<ChatRequest['messages']> {
  const { deadline, signal, clock } = state
  const smaller = await untilEnded(
    // A synchronous throw becomes the step's rejection, as an async one's.
    new Promise<unknown>((resolve) => resolve(reduce([...messages]))),
    { deadline, signal, clock },
  )
  checkMessages(smaller, `recovery.${name}`)
  return smaller as ChatRequest['messages']
}

/**
 * Admission's refusal of the last, shrunk, request, naming the models every
 * pass tried, as the other errors that end a recovery do.
 */
function withEarlierPasses(
  refused: RateLimitedError,
  tried: readonly ModelFailure[],
  done: readonly string[],
  capOver: string | undefined,
): RateLimitedError {
  return restatedRefusal(refused, {
    reason: endedReason(refused.reason, done, capOver),
    causes: [...tried, ...refused.causes],
    cause: refused.cause,
  })
}

/**
 * The reason of the refusal that ends a recovery: the steps run, and why
 * none (more) could help when the output cap alone is over the limit.
 */
function endedReason(reason: string, done: readonly string[], capOver: string | undefined): string {
  const after = done.length === 0 ? '' : ` (after ${done.join(', ')})`
  return `${reason}${after}${capOver === undefined ? '' : `; ${capOver}`}`
}
