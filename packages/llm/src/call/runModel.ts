import { enforcedRemaining, fieldOf, hearAbort, isError, untilEnded, wait } from '@hourglass/core'
import { isClosedClient, isRefusedArgument } from '../adapters/classifyTransport.js'
import {
  type ModelAdapter,
  NEVER_ABORTED,
  type PreparedRequest,
  type SendOptions,
  type SendResult,
  sendTakesNeverAborted,
} from '../adapters/ModelAdapter.js'
import type { Admission, AdmissionForecast } from '../admission/Admission.js'
import { classify } from '../admission/slot.js'
import { type BilledFailure, billedBy, chargeBilledFailure } from '../budget/billedFailure.js'
import type { CostReservation } from '../budget/CostBudget.js'
import { chargeAnswer } from '../budget/chargeAnswer.js'
import { type LlmRetrySkippedMessage, llmChannels } from '../channels.js'
import { isBudgetExceeded, unaffordable } from '../errors/BudgetExceededError.js'
import { isInvalidChatRequest } from '../errors/InvalidChatRequestError.js'
import { isKeysRetired } from '../errors/KeysRetiredError.js'
import { limitKindOf } from '../errors/limitKindOf.js'
import type { ModelFailure } from '../errors/ModelFailure.js'
import { isProviderError, ProviderError } from '../errors/ProviderError.js'
import {
  describeReceived,
  isStreamInterrupted,
  type StreamInterruptedError,
} from '../errors/StreamInterruptedError.js'
import { clampAttempts, decideRetry, type RetryDecisionInput } from '../retry/decideRetry.js'
import { retryDelay } from '../retry/retryDelay.js'
import type { ChatRequest, ChatResponse, Usage } from '../types.js'
import { type AttemptRecord, reportAttempt } from './AttemptRecord.js'
import { admit } from './admit.js'
import type { CallState } from './CallState.js'
import { endedKind } from './endedKind.js'
import { endedWhy } from './endedWhy.js'
import type { LeftForSooner } from './leftForSooner.js'
import type { StreamSink } from './ModelStream.js'
import { earliestOf, otherKeyFree, targetOf, waitOf } from './outlook.js'
import { runModelSend } from './runModelSend.js'
import { keepsRawArguments, StreamCollector } from './StreamCollector.js'
import { stoppedBy } from './stoppedBy.js'
import { isFirstTokenTimeout, type StreamReceived, streamAttempt } from './streamAttempt.js'

export type ModelOutcome =
  | { kind: 'success'; response: ChatResponse }
  /** `left`: given up on only because another model was expected to answer sooner. */
  | { kind: 'fallback'; failure: ModelFailure; left?: LeftForSooner | undefined }
  | { kind: 'fail'; failure: ModelFailure; error: unknown }

/**
 * The attempts on one model: budget check, admission, send, classify,
 * decide (`decideRetry`), wait or hand over. `later` are the models after
 * this one: a rate limit or overload goes to the one expected to answer
 * first when that is sooner than waiting here. `arrival` says why the call
 * came to this model (the first attempt's `choice`). `resume`: the call is
 * back at a model it left for a sooner one (`LeftForSooner`), its attempts
 * counted on. Returns when the model answered or was given up on; throws
 * only what ends the whole call at once (the budget, the deadline, an
 * abort, a stream broken after its first token).
 */
export async function runModel(
  state: CallState,
  adapter: ModelAdapter,
  request: ChatRequest,
  idempotencyKey: string,
  later: readonly ModelAdapter[],
  arrival: string,
  sink: StreamSink | undefined,
  resume?: LeftForSooner | undefined,
): Promise<ModelOutcome> {
  const retrying: RetryInWait = { pending: undefined }
  let outcome: ModelOutcome
  try {
    outcome = await attemptsOn(
      state,
      adapter,
      request,
      idempotencyKey,
      later,
      arrival,
      sink,
      retrying,
      resume,
    )
  } catch (thrown) {
    if (retrying.pending !== undefined) {
      reportRetrySkipped(retrying.pending, endedWhy(thrown, endedKind(thrown, state)) ?? 'error')
    }
    throw thrown
  }
  // Given up before its attempt by the cost budget or admission (any other
  // outcome comes from an attempt, which took the retry).
  if (retrying.pending !== undefined && outcome.kind !== 'success') {
    reportRetrySkipped(retrying.pending, refusedWhy(outcome.failure.cause))
  }
  return outcome
}

/**
 * A retry decided after a failed attempt, from its decision until its
 * attempt starts: if the call ends first, it was never made, and is
 * published as skipped (`retry-skipped`), not left counted as a retry.
 */
interface RetryInWait {
  pending: Omit<LlmRetrySkippedMessage, 'why'> | undefined
}

function reportRetrySkipped(pending: Omit<LlmRetrySkippedMessage, 'why'>, why: string): void {
  llmChannels.retrySkipped.publish(() => ({ ...pending, why }))
}

/** Why a model was given up with no attempt: what refused it (see `runModel`'s returns before a send). */
function refusedWhy(cause: unknown): string {
  if (isBudgetExceeded(cause)) return 'cost-budget'
  if (isKeysRetired(cause)) return 'keys-retired'
  return 'rate-limited'
}

/** `runModel`'s attempts; `retrying` holds the retry decided and not yet made. */
async function attemptsOn(
  state: CallState,
  adapter: ModelAdapter,
  request: ChatRequest,
  idempotencyKey: string,
  later: readonly ModelAdapter[],
  arrival: string,
  sink: StreamSink | undefined,
  retrying: RetryInWait,
  resume: LeftForSooner | undefined,
): Promise<ModelOutcome> {
  const { options, deadline, signal, clock, admission, retry } = state
  const hasFallback = later.length > 0
  const retryBudget = state.retryBudgets?.forProvider(adapter)
  const maxAttempts = clampAttempts(retry.maxAttempts)
  let attempt = resume?.attempt ?? 0
  let overloads = resume?.overloads ?? 0
  let resent = resume?.resent ?? false
  // Keys this call saw rejected (401/403) or out of quota: the next attempt uses another one.
  const rejectedKeys = new Set<string>(resume?.rejectedKeys)
  // Keys a rate limit refused in this call, the longest ago first. With the
  // rejected ones they go last in admission's choice (`refusedKeys`), never
  // out of it: a `Retry-After: 0` cools a key for 0 ms and admission grants
  // its first free key, so the key just refused — first in order, its probe
  // due — was sent again until attempts ran out, a free key never tried.
  // Not an overload's key: the overload is the provider's, not the key's.
  const limitedKeys = new Set<string>(resume?.limitedKeys)
  // The keys in the order they go last: rate-limited (the longest ago
  // first), then rejected — a key a 401 refused is likelier refused again
  // than one whose rate limit may be over.
  const refusedKeys = (): ReadonlySet<string> => {
    if (limitedKeys.size === 0) return rejectedKeys
    const limitedOnly = [...limitedKeys].filter((key) => !rejectedKeys.has(key))
    return new Set([...limitedOnly, ...rejectedKeys])
  }
  // Set by a wait taken here for the keys this call has not seen rejected
  // (`waitsItself` below): the attempt after it is admitted on those keys
  // alone. Estimated once and slept, the wait could end with them still
  // cooling (another call's 429 meanwhile), and admission, offered every
  // key, granted the rejected one, free: refused again, the call failed
  // with the 401, the good key free soon after.
  let unrejectedOnly = false
  const base = { model: adapter.model, provider: adapter.name }
  // Why the next attempt goes to this model, for its record.
  let choice = arrival
  // The last failure here and how the policy read it: what a return to this model decides on.
  let lastError = resume?.error
  let lastRetryable = resume?.retryable ?? false
  // Where this model stands when it is left only for a sooner one.
  const leftHere = (readyAt: number, cooled: boolean): LeftForSooner => ({
    attempt,
    overloads,
    resent,
    rejectedKeys,
    limitedKeys,
    error: lastError,
    retryable: lastRetryable,
    cooled,
    readyAt,
  })
  if (resume !== undefined) {
    // Back at a model left for a sooner one. Its next attempt is no retry:
    // no `retryReason`, and no `retry-skipped` if the call ends before it —
    // the failure it was left after was counted once, as a fallback
    // (`why: 'fallback-sooner'`, a skipped retry); counted again as a retry
    // made, one failure read as two. Its `choice` says it is a return. Without
    // admission its own wait is taken here (the caller checked it fits:
    // `returnWaitMs`); admission's cooldown is waited for in `admit`, as
    // any other.
    const ownWaitMs = resume.cooled ? 0 : resume.readyAt - clock.now()
    if (ownWaitMs > 0) {
      await wait(ownWaitMs, { deadline, signal, clock })
      choice = `${arrival}; waited ${Math.round(ownWaitMs)} ms for its wait to end`
    }
  }
  // The request as this model takes it, built once, before admission.
  let prepared: PreparedRequest | undefined
  // Where its attempts go and what they ask, read for the attempt message only while someone listens.
  const sentTo = { adapter, request }

  for (;;) {
    signal?.throwIfAborted()
    deadline?.throwIfExpired()
    if (prepared === undefined && adapter.prepare !== undefined) {
      // Built before admission: a request this model cannot take (an
      // `InvalidChatRequestError`, or what its builder throws) is refused
      // with nothing sent and nothing spent — no RPM/TPM share, no probe.
      try {
        prepared = adapter.prepare(request, sink !== undefined)
      } catch (thrown) {
        attempt++
        state.attempts++
        const retryReason = takeRetry(retrying)
        reportAttempt(
          {
            ...retryReason,
            deadline,
            attempt: state.attempts,
            modelAttempt: attempt,
            model: base.model,
            provider: base.provider,
            latencyMs: 0,
            promptVersion: options.promptVersion,
            costUsd: state.costUsd,
            decision: 'fail',
            errorClass: className(thrown),
            // As a permanent failure: the same request is refused again, and
            // `why` is what retry metrics and events count a failure by.
            why: 'not-retryable',
            reason: 'the request cannot be built for this model: nothing was sent',
            sent: false,
            choice,
          },
          options.onAttempt,
        )
        throw thrown
      }
    }
    const budget = options.limits?.budget ?? undefined
    // Priced as this provider bills the model (`providerPrices`), when the budget says.
    const estimateUsd = budget?.estimate(adapter.model, request, adapter.name, adapter.dialect.name)
    /** What a failed attempt is billed (`billedOf`), added to the call's cost. */
    const chargeFailure = (billed: BilledFailure | undefined): void => {
      if (budget === undefined) return
      state.costUsd += chargeBilledFailure(
        budget,
        adapter.model,
        request,
        billed,
        adapter.name,
        adapter.dialect.name,
      )
    }
    // A model the budget cannot afford (its first attempt, or a retry after
    // a billed failure, or while other calls hold the budget) is given up on
    // with nothing sent, and the next model of the list — a cheaper one may
    // fit — is tried, as a model admission refuses is. Thrown here, it ended
    // the whole call at the first model too dear, its cheap fallback never
    // asked.
    const unaffordableHere = (thrown: unknown): ModelOutcome => {
      if (!isBudgetExceeded(thrown)) throw thrown
      const failure = { ...base, attempts: attempt, cause: thrown, reason: unaffordable(thrown) }
      return hasFallback ? { kind: 'fallback', failure } : { kind: 'fail', failure, error: thrown }
    }
    // Checked before admission, so a call that cannot afford the model never
    // waits in its line; held only once admitted (below).
    try {
      if (estimateUsd !== undefined) budget?.assertCanSpend(estimateUsd)
    } catch (thrown) {
      return unaffordableHere(thrown)
    }

    // Admission waits for them within the deadline, or refuses naming their wait.
    const admitted = await admit(
      state,
      adapter,
      request,
      later,
      sink !== undefined,
      refusedKeys(),
      unrejectedOnly ? rejectedKeys : undefined,
    )
    unrejectedOnly = false
    if (admitted.kind === 'refused') {
      const { error: refused, reason } = admitted
      const failure = { ...base, attempts: attempt, cause: refused, reason }
      if (!hasFallback) return { kind: 'fail', failure, error: refused }
      return admitted.sooner
        ? { kind: 'fallback', failure, left: leftHere(clock.now(), true) }
        : { kind: 'fallback', failure }
    }
    // The estimate is held from here until the attempt's cost is recorded
    // (each exit below releases it), so calls in flight at once on one
    // budget are each checked against what the others may spend. Not while
    // the call waited in admission's line: nothing was sent then, and a
    // hold there refused calls to other, healthy providers for money no
    // attempt was spending. So it is checked again: what other attempts
    // took meanwhile may leave too little, and this model is then given up
    // on as above, its permit handed back unused — its RPM/TPM share too:
    // kept, refused calls used up the limit that sent ones needed.
    let reservation: CostReservation | undefined
    try {
      reservation = estimateUsd === undefined ? undefined : budget?.reserve(estimateUsd)
    } catch (thrown) {
      admitted.permit?.release({ sent: false })
      return unaffordableHere(thrown)
    }
    const { permit } = admitted
    // Read while the hold is taken, and given back if it throws (a custom
    // adapter's key vault): the hold used to stay for ever, and every later
    // call on the budget was checked against money no attempt was spending.
    let apiKey: string | undefined
    try {
      apiKey = permit ? permit.key : unrejectedKey(adapter, rejectedKeys)
    } catch (thrown) {
      reservation?.release()
      throw thrown
    }
    const chosenBecause = admitted.waited === undefined ? choice : `${choice}; ${admitted.waited}`

    attempt++
    state.attempts++
    // The retry is made: its attempt starts now (the message says whether it was sent).
    const retryReason = takeRetry(retrying)
    const started = clock.now()
    // The same instant on the real clock, which tracers time spans by: a
    // ManualClock's `started` is no such time, and the chat span began
    // `latencyMs` of that clock before its end (a 0 ms span after its own
    // egress span, or one 20 s before its parent when the clock was advanced).
    const startedReal = clock.realTime === true ? started : performance.now()
    // When a stream's first token came (`firstTokenMs` on its records: the
    // time to first token an operator watches, which `latencyMs` — to the
    // stream's end — does not show).
    let firstTokenAt: number | undefined
    const record = (fields: Partial<AttemptRecord> & Pick<AttemptRecord, 'decision'>) =>
      reportAttempt(
        // Object.assign, not a spread followed by fields: on Node 20 each
        // field after a spread costs ~0.4 µs (V8 leaves its fast path).
        Object.assign(
          {
            deadline,
            attempt: state.attempts,
            modelAttempt: attempt,
            model: base.model,
            provider: base.provider,
            latencyMs: Math.round(clock.now() - started),
            promptVersion: options.promptVersion,
            costUsd: state.costUsd,
          },
          fields,
          { choice: chosenBecause },
          retryReason,
          firstTokenAt === undefined
            ? undefined
            : { firstTokenMs: Math.round(firstTokenAt - started) },
        ),
        options.onAttempt,
        sentTo,
        startedReal,
      )
    // A whole answer without a caller's signal, from an adapter of
    // `createAdapter`: nothing but the deadline (which the adapter is given)
    // can end the attempt, so no controller or signal is made for it.
    const controller =
      sink === undefined && signal === undefined && sendTakesNeverAborted(adapter)
        ? undefined
        : new AbortController()
    const unlink = controller === undefined ? noop : follow(controller, signal)
    const send: SendOptions = {
      apiKey,
      idempotencyKey,
      deadline,
      signal: controller === undefined ? NEVER_ABORTED : controller.signal,
      prepared,
      // Set by the adapter once a 2xx answer's body is being read.
      answerStarted: false,
    }
    // What a stream received, for the charge of an attempt that fails after the provider took it.
    const received: StreamReceived | undefined =
      sink === undefined
        ? undefined
        : { answered: false, collector: new StreamCollector(keepsRawArguments(adapter)) }
    let result: SendResult
    try {
      // In MODEL_SEND: the HTTP attempt inside is this model attempt's, not a call of its own.
      result = await runModelSend(() =>
        sink === undefined
          ? adapter.send(request, send)
          : streamAttempt({
              adapter,
              request,
              send,
              abort: (reason) => controller?.abort(reason),
              sink,
              firstTokenTimeoutMs: Math.max(0, options.firstTokenTimeoutMs ?? 0),
              clock: deadline?.clock,
              // The provider is answering: release waiters on a half-open probe now, not at the end.
              onFirstTokenTime: () => {
                firstTokenAt = clock.now()
              },
              onFirstToken: () => void permit?.report({ ok: true })?.catch(() => {}),
              received,
            }),
      )
    } catch (thrown) {
      // Stopped (the deadline, an abort) or cut after the first token: a
      // count by kind would miss the attempt without one.
      const errorKind = endedKind(thrown, state)
      // Never left (the HTTP client refused it for the deadline or the
      // signal, or the adapter refused to build it when sending): its
      // RPM/TPM share goes back, as a permit refused by the budget does.
      // Released as sent, the share stayed counted though the record said
      // `sent: false`: with `rpm: 1`, the next call waited out the window.
      const unsent = neverLeft(thrown, errorKind, send, received)
      permit?.release(unsent ? { sent: false } : undefined)
      // A rate limit or overload in an error frame after the first token
      // (Qwen's `Throttling`, Anthropic's `overloaded_error` mid-answer): the
      // permit reported an answer at that token (to release a probe's
      // waiters), so the limit goes to admission on its own and the cooldown
      // starts for the calls after this one. This call still ends here:
      // nothing is resent once tokens were delivered. Not awaited: the local
      // cooldown is set at once, and the call is over (a store's write ends
      // on its own).
      if (permit !== undefined && admission !== undefined) {
        const limit = limitAfterFirstToken(thrown)
        if (limit !== undefined) {
          void admission
            .report(
              adapter.name,
              permit.key,
              {
                ok: false,
                error: limit.normalized,
                latencyMs: clock.now() - started,
                cooldownMs: ownCooldownMs(retry, attempt, limit),
              },
              { endpoint: adapter.baseURL, model: adapter.model },
            )
            .catch(() => {})
        }
      }
      // A stream cut after its first token, or after its 2xx headers, was
      // billed, and so was a whole answer whose body was being read when
      // the deadline or the caller's signal ended it (the stop passes
      // through as it is; a cut by anything else comes back as a failure,
      // charged below the same way): charged before the record, which
      // carries the cost.
      const billed = billedOf(received, send)
      try {
        chargeFailure(billed)
      } finally {
        reservation?.release()
      }
      const ended: Partial<AttemptRecord> & Pick<AttemptRecord, 'decision'> = {
        decision: 'fail',
        errorClass: className(thrown),
        errorKind,
        // A stream broken after its first token was not ended by the caller:
        // "the call was ended" read as a deadline or an abort in the logs.
        reason: isStreamInterrupted(thrown)
          ? interruptedReason(thrown, errorKind, received?.status)
          : 'the call was ended',
        why: endedWhy(thrown, errorKind),
      }
      // The caller's own stop (a consumer that left its loop, the stream's
      // cancel, its signal): no failure, as fetch's `stoppedBy` says of it.
      const by = stoppedBy(thrown, state)
      if (by !== undefined) ended.stoppedBy = by
      // A stream broken after its 2xx headers had an HTTP answer: its status.
      // So had a whole answer whose body was being read (charged as one),
      // and the next hop's 504 saying the budget it was sent ran out.
      const status =
        received?.status ?? send.answerStatus ?? (send.answerStarted === true ? 200 : undefined)
      if (status !== undefined) ended.status = status
      // A stream cut after its usage came (an early finish, then more
      // answer), or after its input counts (`cutUsage`): charged by that
      // usage, so its tokens are on the record too.
      Object.assign(ended, billedCounts(billed, received))
      // The provider's id of the answer it broke off (named before its
      // finish): what its support asks for, as a whole answer's record has.
      const responseId = streamedResponseId(received)
      if (responseId !== undefined) ended.responseId = responseId
      // The request id of the 200 an error frame or a cut broke after its first token.
      const requestId = isStreamInterrupted(thrown) ? requestIdOf(thrown.cause) : undefined
      if (requestId !== undefined) ended.providerRequestId = requestId
      if (unsent) ended.sent = false
      // Refused before it left by this adapter's own HTTP client (the time
      // left under its fetch's `minBudgetMs`) while the call's deadline
      // still runs: this model's limit, not the call's end. A model after it
      // (another fetch, another provider) may still answer in the time left;
      // thrown, the call failed "deadline exceeded" with time left, its
      // fallback never asked. The last model still ends the call with it.
      if (
        unsent &&
        errorKind === 'deadline_exceeded' &&
        hasFallback &&
        signal?.aborted !== true &&
        !stopsNow(deadline)
      ) {
        const reason = `${base.model}@${base.provider}: its HTTP client refused to send with the time left (its minBudgetMs); nothing was sent`
        ended.decision = 'fallback'
        ended.reason = reason
        record(ended)
        return { kind: 'fallback', failure: { ...base, attempts: attempt, cause: thrown, reason } }
      }
      record(ended)
      throw thrown
    } finally {
      unlink()
    }

    const latencyMs = clock.now() - started
    // An answer is charged before anything is awaited (the hold ends only
    // once the cost is spent), whether it is returned or, ended in an
    // error, becomes a failed attempt below: charged once, as what it was.
    let charged = false
    if (result.ok) {
      try {
        if (budget !== undefined)
          state.costUsd += chargeAnswer(
            budget,
            adapter.model,
            request,
            result.response,
            adapter.name,
            adapter.dialect.name,
          )
      } finally {
        reservation?.release()
      }
      charged = true
    }
    // An answer that ended in an error (finish reason `error`: DeepSeek's
    // `insufficient_system_resource`, Gemini's `MALFORMED_FUNCTION_CALL`)
    // of which the caller got nothing yet — a whole answer, or a stream
    // before its first token — is a failed attempt, not an answer: retried
    // or handed to the next model as a 5xx would be. Returned as a success,
    // a fallback the caller listed never answered, and the record said
    // `success`. Charged as the answer it was (its usage came with it).
    // What the answer that ended in an error said of itself, for its failure records.
    let endedAnswer: Partial<AttemptRecord> | undefined
    if (
      result.ok &&
      result.response.finishReason === 'error' &&
      received?.collector.sawToken !== true
    ) {
      endedAnswer = answerFields(result.response, received)
      result = {
        ok: false,
        error: answerEndedInError(
          adapter,
          result.status,
          result.response.providerFinishReason,
          result.response.providerRequestId,
        ),
      }
    }
    if (result.ok) {
      const { response } = result
      await permit?.report({ ok: true, latencyMs })
      retryBudget?.recordSuccess()
      record(
        Object.assign(
          { decision: 'success' as const, status: result.status },
          answerFields(response, received),
        ),
      )
      return { kind: 'success', response }
    }

    const error: ProviderError = result.error
    // A 2xx cut while read, or a stream that took the request then sent no
    // token: billed by the provider, so charged. Its records carry the
    // provider's counts it was charged by (Anthropic's `message_start`
    // before a first-token timeout), with or without a budget; an answer
    // that ended in an error carries its own (`endedAnswer`).
    let counts: Partial<AttemptRecord> | undefined = endedAnswer
    try {
      if (!charged) {
        let billed = withInputCounts(billedBy(error, received?.answered), received)
        if (billed === undefined && error.usage !== undefined) {
          // An error the provider put in a 2xx answer after reporting its
          // counts (Gemini's JSON array: chunks with `usageMetadata`, then
          // `{"error": …}`): billed as they say, charged as the answer it
          // was — and those counts, the provider's own, are on its record.
          billed = { kind: 'cut', outputWeight: 0, usage: error.usage }
          counts = { inputTokens: error.usage.inputTokens, outputTokens: error.usage.outputTokens }
          cacheCounts(counts, error.usage)
        } else {
          if (billed === undefined && error.outputCharsBeforeError !== undefined) {
            // The same answer with output before its error but no counts:
            // charged as a stream cut before its usage is (the prompt
            // estimate plus the output it carried), not as a free refusal.
            billed = { kind: 'cut', outputWeight: error.outputCharsBeforeError, usage: undefined }
          }
          counts = billedCounts(billed, received)
        }
        chargeFailure(billed)
      }
    } finally {
      reservation?.release()
    }
    // A stream that took the request and named its answer, then failed
    // before a token (cut, timed out, an error frame): that id on its
    // records, as on a broken stream's; an answer that ended in an error
    // named its own (`endedAnswer`).
    if (endedAnswer === undefined) {
      const responseId = streamedResponseId(received)
      if (responseId !== undefined) counts = { ...counts, responseId }
    }
    // The provider's request id of the answer the failure came in (an error
    // status, a stream's error frame): on each of its records, for a support ticket.
    const requestId = requestIdOf(error)
    if (requestId !== undefined) counts = { ...counts, providerRequestId: requestId }
    // Refused by the HTTP client before it left: said so on its records.
    const unsent = refusedBySender(error)
    if (unsent) counts = { ...counts, sent: false }
    // A rate limit or overload by the one test admission and `decideRetry`
    // apply too (`limitKindOf`), so the wait asked for here is the cooldown
    // admission starts, and the earliest-answer rule sees the same limit.
    const limit = limitKindOf(error)
    const limited = limit !== undefined
    // The caller's own waits (`retryDelay`), when it set them, also set the
    // cooldown a limit without a server hint starts; else admission's defaults.
    const cooldownMs =
      permit !== undefined && limited ? ownCooldownMs(retry, attempt, error) : undefined
    // Nothing left, so nothing to tell admission of the provider: the permit
    // is handed back with its RPM/TPM share, which the provider never
    // counted (reported, the share stayed in the window until it ended).
    if (unsent) permit?.release({ sent: false })
    const reported = unsent
      ? undefined
      : permit?.report({
          ok: false,
          error: error.normalized,
          latencyMs,
          ...(cooldownMs === undefined ? {} : { cooldownMs }),
        })
    // A first-token timeout is not resent to the same model (the provider may
    // be generating and billing it), unless the caller allowed one resend.
    const resend =
      !resent && retry.resendAfterFirstTokenTimeout === true && isFirstTokenTimeout(error)
    const retryable = error.retryable || resend
    lastError = error
    lastRetryable = retryable
    // Counted before the store's write below, which the call may not outlive:
    // the provider failed whatever ends the call next.
    if (retryable) retryBudget?.recordFailure()
    // The local view is updated at once; the store's write may not answer
    // (Redis down): not past the deadline, nor after a cancel.
    if (reported !== undefined) {
      // Ended already (the deadline or a cancel at the same moment as this
      // attempt's failure: a first-token timeout due when the deadline is):
      // the store's write did not end the call, and the record must not say so.
      const endedBefore = signal?.aborted === true || stopsNow(deadline)
      try {
        await untilEnded(reported, { deadline, signal, clock })
      } catch (thrown) {
        // The provider answered (and may bill) this attempt: it is recorded
        // with its answer, not lost because the call ended while admission
        // was writing the cooldown.
        const stop = endedKind(thrown, state)
        const ended = stop ?? className(thrown)
        record({
          ...counts,
          decision: 'fail',
          status: error.status,
          errorClass: className(error.cause ?? error),
          errorKind: error.kind,
          providerMessage: providerMessageOf(error),
          why: endedWhy(thrown, stop),
          // The provider's answer time, not the store's wait.
          latencyMs: Math.round(latencyMs),
          reason: endedBefore
            ? `${error.kind} (HTTP ${error.status}); the call was ended (${ended})`
            : `${error.kind} (HTTP ${error.status}); the call was ended (${ended}) while admission wrote the cooldown to its store`,
        })
        throw thrown
      }
    }
    if (limit === 'overloaded') overloads++
    if (limit === 'rate_limited' && send.apiKey !== undefined) {
      // Moved to the end: the key refused the longest ago is tried first.
      limitedKeys.delete(send.apiKey)
      limitedKeys.add(send.apiKey)
    }
    // A rejected key, or a key out of quota (billing, credit: the account
    // behind that key), says nothing about the request or the provider's
    // load: the same call goes again at once with another key of the
    // provider (not a retry the retry budget counts), while admission
    // retires this one (or cools it, when the provider said when the quota
    // comes back).
    const keyBound = error.kind === 'auth' || error.kind === 'quota_exhausted'
    if (keyBound && send.apiKey !== undefined) {
      rejectedKeys.add(send.apiKey)
      if (attempt < maxAttempts && adapter.apiKeys.some((key) => !rejectedKeys.has(key))) {
        const why = error.kind === 'auth' ? 'was rejected' : 'is out of quota'
        record({
          decision: 'retry',
          status: error.status,
          errorClass: className(error.cause ?? error),
          errorKind: error.kind,
          providerMessage: providerMessageOf(error),
          ...(requestId === undefined ? {} : { providerRequestId: requestId }),
          delayMs: 0,
          reason: `this key ${why}; the next key of the provider is tried`,
        })
        choice = `another key of this provider (the last one ${why})`
        retrying.pending = pendingRetry(state, attempt, base, error.kind)
        continue
      }
    }
    // A rate limit or overload: the wait here is compared with the earliest
    // answer expected from the models after this one. With admission it has
    // just become a shared cooldown for this provider+key, so the wait is
    // admission's (another free key makes it 0) and `acquire` takes it —
    // sleeping here too would wait twice. Such a retry adds no load while the
    // limit holds (nothing is sent until the cooldown is over and one probe
    // has been answered), so the retry budget — which still counts the
    // failure — does not gate it: it gates the retries that would be sent
    // at once to a failing provider (5xx, network, timeouts).
    const cooled = limited && admission !== undefined
    const all = cooled ? admission.forecast(targetOf(adapter, refusedKeys())) : undefined
    // Free now only through a key this call saw rejected, one admission
    // does not hold back (`retireMs: 0`): the wait is for the nearest key it
    // has not, and is taken here — `acquire` would grant the rejected key at
    // once, and it was refused again (a 429 asking 30 s of the good key: the
    // call failed with the 401, the good key free 30 s later). After the
    // wait the fresh key comes first in admission's choice.
    const fresh =
      admission !== undefined && all !== undefined && waitOf(all) === 0 && rejectedKeys.size > 0
        ? unrejectedForecast(admission, adapter, rejectedKeys)
        : undefined
    const waitsItself = fresh !== undefined && waitOf(fresh) > 0 && Number.isFinite(waitOf(fresh))
    const own = waitsItself ? fresh : all
    // Unless the server's wait was 0 ("retry now": `Retry-After: 0`,
    // `retry-after-ms: 0`): the cooldown it starts ends at once, each failed
    // probe extends it by 0 and hands over to the next caller in line, and
    // every retry is sent back to back to the key that was just refused.
    // Ungated, 20 calls in such a storm sent all their attempts: 60
    // requests in ~100 ms. The budget gates those, as it gates 5xx retries.
    const held = cooled && error.retryAfterMs !== 0
    const decisionInput: RetryDecisionInput = {
      ...retry.delay,
      error: retryable === error.retryable ? error.normalized : { ...error.normalized, retryable },
      attempt,
      maxAttempts,
      overloads,
      max529Retries: retry.max529Retries,
      priority: retry.priority,
      // An observe-only deadline decides nothing (dark mode retries as without it).
      remainingMs: enforcedRemaining(deadline),
      minAttemptMs: retry.minAttemptMs,
      maxRetryAfterMs: retry.maxRetryAfterMs,
      hasFallback,
      retryBudget: held ? undefined : retryBudget,
      waitMs: own === undefined ? undefined : waitOf(own),
      otherKeyFree: cooled && otherKeyFree(admission, adapter, send.apiKey, rejectedKeys),
      latencyMs: own?.latencyMs,
      fallback:
        limited && hasFallback
          ? earliestOf(state, later, request, { stream: sink !== undefined })
          : undefined,
    }
    const decision = decideRetry(decisionInput)
    record({
      ...counts,
      decision: decision.action,
      status: error.status,
      errorClass: className(error.cause ?? error),
      errorKind: error.kind,
      providerMessage: providerMessageOf(error),
      delayMs: decision.action === 'retry' ? decision.delayMs : undefined,
      reason: decision.reason,
      why: decision.action === 'retry' ? undefined : decision.why,
    })
    if (decision.action === 'retry') {
      retrying.pending = pendingRetry(state, attempt, base, error.kind)
      if (resend) resent = true
      choice = `retry ${attempt + 1} of ${maxAttempts} on this model${resend ? ' (resendAfterFirstTokenTimeout)' : ''}`
      unrejectedOnly = waitsItself
      // `signal`, not only the caller's: a stream's cancel ends the wait at once too.
      if (!cooled || waitsItself) await wait(decision.delayMs, { deadline, signal, clock })
      continue
    }
    const failure = { ...base, attempts: attempt, cause: error, reason: decision.reason }
    if (decision.action === 'fail') return { kind: 'fail', failure, error }
    // Left only because another model is expected to answer first: the call
    // may come back once those have failed, after this wait.
    return decision.why === 'fallback-sooner'
      ? {
          kind: 'fallback',
          failure,
          left: leftHere(clock.now() + (decision.waitMs ?? 0), cooled && !waitsItself),
        }
      : { kind: 'fallback', failure }
  }
}

/** The retry about to wait for attempt `attempt + 1` on this model, for `retry-skipped`. */
function pendingRetry(
  state: CallState,
  attempt: number,
  base: { model: string; provider: string },
  reason: string,
): Omit<LlmRetrySkippedMessage, 'why'> {
  return {
    deadline: state.deadline,
    attempt: state.attempts + 1,
    modelAttempt: attempt + 1,
    model: base.model,
    provider: base.provider,
    reason,
  }
}

/** The retry an attempt starting now makes, as its record's `retryReason`; no longer pending. */
function takeRetry(retrying: RetryInWait): { retryReason: string } | undefined {
  const pending = retrying.pending
  retrying.pending = undefined
  return pending === undefined ? undefined : { retryReason: pending.reason }
}

/**
 * What an answer says of itself, for its attempt's record: the provider's
 * response id, the model that answered, why it stopped, the backend's
 * fingerprint and tier, and its tokens — only when the provider reported
 * them. A stream whose usage never came (`include_usage` ignored, a body
 * ended by the grace after its finish), or a whole answer without one
 * (`usageReported: false`: a server or proxy that leaves `usage` out), has
 * zeros in `response.usage`: as tokens on the record they read as a call
 * that used none (the budget charges it by its estimate all the same).
 */
function answerFields(
  response: ChatResponse,
  received: StreamReceived | undefined,
): Partial<AttemptRecord> {
  const usage =
    received !== undefined
      ? received.collector.reportedUsage
      : response.usageReported === false
        ? undefined
        : response.usage
  const fields: Partial<AttemptRecord> = {
    responseModel: response.model,
    finishReason: response.finishReason,
  }
  if (usage !== undefined) {
    fields.inputTokens = usage.inputTokens
    fields.outputTokens = usage.outputTokens
    cacheCounts(fields, usage)
  }
  // Left out when empty: a stream that named no id (or a body with none) has ''.
  if (response.id !== '') fields.responseId = response.id
  if (response.systemFingerprint !== undefined)
    fields.systemFingerprint = response.systemFingerprint
  if (response.serviceTier !== undefined) fields.serviceTier = response.serviceTier
  return fields
}

/** A stream broken after its first token, in the words of the other reasons: what broke it, and what had come. */
function interruptedReason(
  thrown: StreamInterruptedError,
  errorKind: string | undefined,
  status: number | undefined,
): string {
  const code = isProviderError(thrown.cause) ? thrown.cause.providerCode : undefined
  const http = status === undefined ? '' : `HTTP ${status}`
  const said = [http, code].filter((part) => part !== undefined && part !== '').join(', ')
  return `${errorKind ?? 'error'}${said === '' ? '' : ` (${said})`}: the stream broke after the first token (${describeReceived(thrown)}); not restarted`
}

/** A whole answer (or a stream with no token) that ended in an error: a retryable server error. */
function answerEndedInError(
  adapter: ModelAdapter,
  status: number,
  providerFinishReason: string | undefined,
  requestId: string | undefined,
): ProviderError {
  // The provider's own reason (Gemini's OTHER, MALFORMED_FUNCTION_CALL) as
  // the code, so the attempt's reason and the error name which it was.
  const said = providerFinishReason === undefined ? '`error`' : providerFinishReason
  return new ProviderError({
    provider: adapter.name,
    model: adapter.model,
    error: {
      kind: 'server_error',
      retryable: true,
      status,
      ...(providerFinishReason === undefined
        ? {}
        : { providerCode: `finishReason:${providerFinishReason}` }),
      message: `the answer ended in an error (finish reason ${said}: cut short by the provider, or a malformed tool call); not a complete answer`,
    },
    requestId,
  })
}

/**
 * The provider's limit that broke a stream after its first token (an error
 * frame admission would cool or retire a key for), else undefined.
 */
function limitAfterFirstToken(thrown: unknown): ProviderError | undefined {
  if (!isStreamInterrupted(thrown) || !isProviderError(thrown.cause)) return undefined
  const verdict = classify({ ok: false, error: thrown.cause.normalized })
  return verdict === 'cooldown' || verdict === 'retire' ? thrown.cause : undefined
}

/** The cooldown a limit without a server wait starts when the caller set its own waits (`retry.delay`). */
function ownCooldownMs(
  retry: CallState['retry'],
  attempt: number,
  error: ProviderError,
): number | undefined {
  return error.retryAfterMs === undefined && retry.delay !== undefined
    ? retryDelay({ ...retry.delay, attempt, error: error.normalized }).delayMs
    : undefined
}

/**
 * What an attempt that ended by a throw had been billed for: a stream's
 * output or its prompt, once its 2xx stream headers came; a whole answer,
 * once the adapter had started reading a 2xx answer's body; else nothing.
 */
function billedOf(
  received: StreamReceived | undefined,
  send: SendOptions,
): BilledFailure | undefined {
  if (received?.answered === true) {
    const { collector } = received
    if (collector.sawToken) {
      const { reportedUsage, outputWeight } = collector
      const serviceTier = servedTier(received)
      if (reportedUsage !== undefined)
        return { kind: 'cut', outputWeight, usage: reportedUsage, serviceTier }
      // Its counts so far, the output charged by them or by the characters
      // delivered, whichever is more — capped at `maxTokens` when by them
      // (`chargeBilledFailure`, which has the request and the price).
      const usage = cutUsage(received)
      return usage === undefined
        ? { kind: 'cut', outputWeight, usage, serviceTier }
        : { kind: 'cut', outputWeight, usage, soFar: true, serviceTier }
    }
    return withInputCounts(PROMPT, received)
  }
  return send.answerStarted === true ? WHOLE : undefined
}

/**
 * The provider's counts a billed failure was charged by, for its record:
 * the input count of a `cut` charged by usage, and the output count only
 * when the provider's usage had come — before it, the charge took the
 * delivered text where that was more (`cutUsage`), an estimate the record
 * (and the GenAI token metric read from it) must not pass off as the
 * provider's count. Nothing for a charge by the estimate.
 */
function billedCounts(
  billed: BilledFailure | undefined,
  received: StreamReceived | undefined,
): Partial<AttemptRecord> | undefined {
  if (billed?.kind !== 'cut' || billed.usage === undefined) return undefined
  const counts: Partial<AttemptRecord> = { inputTokens: billed.usage.inputTokens }
  if (received?.collector.reportedUsage !== undefined)
    counts.outputTokens = billed.usage.outputTokens
  cacheCounts(counts, billed.usage)
  return counts
}

/** The prompt-cache and reasoning counts of `usage` onto a record, those the provider reported. */
function cacheCounts(fields: Partial<AttemptRecord>, usage: Usage): void {
  if (usage.cachedInputTokens !== undefined) fields.cachedInputTokens = usage.cachedInputTokens
  if (usage.cacheCreationInputTokens !== undefined)
    fields.cacheCreationInputTokens = usage.cacheCreationInputTokens
  if (usage.reasoningTokens !== undefined) fields.reasoningTokens = usage.reasoningTokens
}

/**
 * A stream that took the request and sent no token is charged by the input
 * counts it had sent (`cutUsage`), when it had: the prompt estimate only
 * when it had not.
 */
function withInputCounts(
  billed: BilledFailure | undefined,
  received: StreamReceived | undefined,
): BilledFailure | undefined {
  if (billed?.kind !== 'prompt' || received === undefined) return billed
  const usage = cutUsage(received)
  return usage === undefined
    ? billed
    : { kind: 'cut', outputWeight: 0, usage, serviceTier: servedTier(received) }
}

/**
 * The service tier a stream said serves its answer (its `finish`, or the
 * parser's before it: Anthropic's `message_start`, OpenAI's chunks), for
 * the charge of a stream cut after it said; undefined when it said none.
 */
function servedTier(received: StreamReceived): string | undefined {
  const finished = received.collector.serviceTier
  if (finished !== undefined) return finished
  try {
    return received.serviceTierSoFar?.()
  } catch {
    return undefined
  }
}

/**
 * Whether an attempt that ended by a throw never left: the adapter refused
 * to build it when sending (an adapter without `prepare`), as the refusal
 * before admission; or the HTTP client refused it for want of budget, or for
 * the signal (`SendOptions.sent`) — its stop is no provider's latency.
 */
function neverLeft(
  thrown: unknown,
  errorKind: ReturnType<typeof endedKind>,
  send: SendOptions,
  received: StreamReceived | undefined,
): boolean {
  if (received?.answered === true || send.answerStarted === true) return false
  if (isInvalidChatRequest(thrown)) return true
  return send.sent === false && (errorKind === 'deadline_exceeded' || errorKind === 'aborted')
}

/**
 * undici refused to send the request (`UND_ERR_INVALID_ARG` or
 * `ERR_INVALID_URL` before any answer: a header value with a line break, a
 * URL that does not parse; or a closed adapter's client,
 * `classifyTransport`): nothing left, so the attempt is no operation on
 * the provider.
 */
function refusedBySender(error: ProviderError): boolean {
  const code = (error.cause as { code?: unknown } | undefined)?.code
  return (
    error.status === 0 &&
    error.kind === 'network' &&
    (isRefusedArgument(code) || isClosedClient(code))
  )
}

const PROMPT: BilledFailure = { kind: 'prompt' }
const WHOLE: BilledFailure = { kind: 'whole' }

/**
 * The usage a stream cut before its `finish` is charged by, when the provider
 * had already sent its input counts (Anthropic's `message_start`, Gemini's
 * `usageMetadata` on every chunk, an OpenAI-compatible server's usage on
 * every chunk): those counts — the cached and uncached input as billed, not
 * the prompt estimate — and its running output count (a `cut` charges the
 * larger of it and what was delivered: `BilledFailure.soFar`). Undefined
 * without an input count: the estimate stands.
 */
function cutUsage(received: StreamReceived): Usage | undefined {
  let soFar: Usage | undefined
  try {
    soFar = received.usageSoFar?.()
  } catch {
    // A custom parser's getter that throws: the estimate stands.
    return undefined
  }
  if (soFar === undefined || !(soFar.inputTokens > 0)) return undefined
  return soFar
}

/**
 * The provider's id of the answer a stream had named before it failed
 * (`StreamReceived.responseIdSoFar`); undefined when it named none — so too
 * when a custom adapter's getter throws or gives no string.
 */
function streamedResponseId(received: StreamReceived | undefined): string | undefined {
  if (received?.responseIdSoFar === undefined) return undefined
  try {
    const id: unknown = received.responseIdSoFar()
    return typeof id === 'string' && id !== '' ? id : undefined
  } catch {
    return undefined
  }
}

/**
 * Aborts `controller` when `signal` does, with its reason; returns the
 * unlink. Through core's `hearAbort`: every attempt of every call on one
 * caller's signal shares one `abort` listener on it. A listener each made
 * `Promise.all(prompts.map((p) => callModel({ ..., signal })))` warn
 * "Possible EventTarget memory leak detected. 11 abort listeners"
 * (MaxListenersExceededWarning) at 11 calls in flight.
 */
function follow(controller: AbortController, signal: AbortSignal | undefined): () => void {
  if (signal === undefined) return noop
  if (signal.aborted) {
    controller.abort(signal.reason)
    return noop
  }
  return hearAbort(signal, () => controller.abort(signal.reason))
}

const noop = () => {}

/** The deadline has ended the call (expired, or cancelled; not an observe-only one's expiry). */
function stopsNow(deadline: CallState['deadline']): boolean {
  try {
    deadline?.throwIfExpired()
    return false
  } catch {
    return true
  }
}

/** The adapter's next key in rotation, skipping keys this call saw rejected. */
function unrejectedKey(adapter: ModelAdapter, rejected: ReadonlySet<string>): string | undefined {
  let key = adapter.nextKey()
  for (let i = 1; i < adapter.apiKeys.length && key !== undefined && rejected.has(key); i++) {
    key = adapter.nextKey()
  }
  return key
}

/**
 * Admission's forecast for `adapter`'s keys this call has not seen
 * `rejected`; undefined when it saw every one so.
 */
function unrejectedForecast(
  admission: Admission,
  adapter: ModelAdapter,
  rejected: ReadonlySet<string>,
): AdmissionForecast | undefined {
  const keys = adapter.apiKeys.filter((key) => !rejected.has(key))
  return keys.length === 0 ? undefined : admission.forecast({ ...targetOf(adapter), keys })
}

/**
 * The thrown value's class for the record. Never throws: a caller's stop
 * reason passes through as it is and can be anything — `instanceof` of a
 * revoked Proxy throws, as can a `constructor` getter — and a throw here
 * replaced the reason the call rejects with.
 */
function className(error: unknown): string {
  // Unreadable (a revoked Proxy, a throwing getter): said by its type alone.
  const name = isError(error) ? fieldOf(fieldOf(error, 'constructor'), 'name') : undefined
  return typeof name === 'string' ? name : typeof error
}

/** The request id a failure's `ProviderError` carries (`providerRequestId`), when it is one. */
function requestIdOf(error: unknown): string | undefined {
  return isProviderError(error) ? error.providerRequestId : undefined
}

/**
 * What the provider said, for the attempt's record: its message as the
 * dialect read it (cut to 500 characters, no headers or keys), or nothing
 * when it said nothing — `reason` says what the policy made of it; an
 * operator reading why a provider failed needs its own words too. Said by
 * the provider: an HTTP error answer, or an error it put in a 2xx answer
 * (which carries its code). Not our own words: a timeout or a connection
 * failure (no answer, or a 200 with no token in time), nor the `HTTP 500`
 * that stands in for an empty message.
 */
function providerMessageOf(error: ProviderError): string | undefined {
  const answered = error.status >= 400 || (error.status > 0 && error.providerCode !== undefined)
  if (!answered) return undefined
  const message = error.normalized.message
  return message === '' || message === `HTTP ${error.status}` ? undefined : message
}
