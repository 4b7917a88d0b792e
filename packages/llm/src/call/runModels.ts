import type { ModelAdapter } from '../adapters/ModelAdapter.js'
import { requestedServiceTier } from '../budget/requestedServiceTier.js'
import { BudgetExceededError, isBudgetExceeded } from '../errors/BudgetExceededError.js'
import { REQUEST_BOUND_KINDS } from '../errors/errorKinds.js'
import { limitKindOf } from '../errors/limitKindOf.js'
import type { ModelFailure } from '../errors/ModelFailure.js'
import { ModelUnavailableError } from '../errors/ModelUnavailableError.js'
import { isProviderError } from '../errors/ProviderError.js'
import { isRateLimited } from '../errors/RateLimitedError.js'
import { RequestRejectedError } from '../errors/RequestRejectedError.js'
import type { ChatRequest, ChatResponse } from '../types.js'
import type { CallState } from './CallState.js'
import { type LeftForSooner, returnWaitMs } from './leftForSooner.js'
import type { StreamSink } from './ModelStream.js'
import { labelOf, outlookOf } from './outlook.js'
import { type ModelOutcome, runModel } from './runModel.js'
import { soonestRefusal } from './soonestRefusal.js'
import { stripThinkingSignatures } from './stripThinkingSignatures.js'

/**
 * Down the models list: the primary gets the history as given; every
 * fallback gets the same history with thinking signatures stripped (a
 * signature is valid only for the model that issued it; the text is kept) —
 * except a fallback that is the primary's model again (the same provider and
 * model through another key, endpoint or proxy), which takes the history as
 * the primary does: stripped, Anthropic's thinking was left out, and with
 * thinking on a tool-use turn without its thinking is refused, so an
 * overload of the primary became a `bad_request` of the whole call.
 * A fallback is not a new turn: same request, same `Idempotency-Key`.
 *
 * A model left only because another was expected to answer sooner (a rate
 * limit or overload with a wait, a cooldown admission did not wait for) is
 * gone back to once the models after it have failed, when its wait still
 * fits by the rules every wait does (`returnWaitMs`): before, the call
 * failed with most of its deadline left, though that model — refused with
 * nothing processed or billed — would have answered after its cooldown.
 * Models given up on for their own reasons are not.
 */
export async function runModels(
  state: CallState,
  request: ChatRequest,
  idempotencyKey: string,
  sink: StreamSink | undefined,
): Promise<ChatResponse> {
  const models = state.options.models
  const causes: ModelFailure[] = []
  const sentTo = new Map<string, ChatRequest>()
  let arrival = 'first model in the list'
  const primary = models[0] as ModelAdapter
  // Every model's price, before anything is sent: a fallback missing from
  // the price table (a typo) threw UnknownPriceError only once the primary
  // had failed — after its attempts were sent and billed, and in place of
  // the primary's own error.
  const budget = state.options.limits?.budget ?? undefined
  // The tier asked for too (`extra.service_tier`): a priority request on a
  // model without a priority price would be held, and charged, at the
  // standard price.
  const tier = requestedServiceTier(request)
  if (budget !== undefined) for (const m of models) budget.assertPriced(m.model, m.name, tier)
  // Models left only for one expected to answer sooner, in list order.
  const left: LeftModel[] = []
  let last: ModelOutcome | undefined
  for (const [index, adapter] of models.entries()) {
    const asPrimary = index === 0 || sameModel(adapter, primary)
    const sent = historyFor(request, adapter, asPrimary, sentTo)
    const outcome = await runModel(
      state,
      adapter,
      sent,
      idempotencyKey,
      models.slice(index + 1),
      arrival,
      sink,
    )
    if (outcome.kind === 'success') return signedBy(outcome.response, adapter)
    causes.push(outcome.failure)
    arrival = `fallback from ${labelOf(adapter)}: ${outcome.failure.reason}`
    if (outcome.kind === 'fallback' && outcome.left !== undefined) {
      left.push({ index, adapter, request: sent, left: outcome.left, failure: outcome.failure })
    }
    last = outcome
    if (outcome.kind === 'fail') {
      if (!mayReturn(state, outcome)) throw endedBy(state, outcome, causes, models.length)
      break
    }
  }
  // The models after those left for a sooner answer have failed: back to
  // the one of them expected to answer first whose wait still fits (list
  // order on a tie), the others its fallbacks — the same choice as on the
  // way down. Each return sends at least one attempt or is not made again,
  // and attempts count on, so this ends. A model gone back to keeps one
  // entry in `causes`, its last: the earlier one is taken out and the new
  // one, its attempts counted from the first, goes at the end (the order
  // each model gave up in). With both kept, its first attempts were summed
  // twice (the gateway's "N attempts were sent"), and the smallest wait of
  // all causes could be its stale one, which the return had found wrong.
  for (;;) {
    const next = nextReturn(state, left)
    if (next === undefined) break
    const { back, others } = next
    left.splice(left.indexOf(back), 1)
    const { adapter, request: sent, left: resume } = back
    const outcome = await runModel(
      state,
      adapter,
      sent,
      idempotencyKey,
      others,
      `back to ${labelOf(adapter)} after the models after it failed`,
      sink,
      resume,
    )
    if (outcome.kind === 'success') return signedBy(outcome.response, adapter)
    const earlier = causes.indexOf(back.failure)
    if (earlier !== -1) causes.splice(earlier, 1)
    causes.push(outcome.failure)
    last = outcome
    if (
      outcome.kind === 'fallback' &&
      outcome.left !== undefined &&
      outcome.left.attempt > resume.attempt
    ) {
      left.push({ ...back, left: outcome.left, failure: outcome.failure })
      left.sort((a, b) => a.index - b.index)
    }
    if (outcome.kind === 'fail' && !mayReturn(state, outcome)) {
      throw endedBy(state, outcome, causes, models.length)
    }
  }
  throw endedBy(state, last, causes, models.length)
}

/** A model the call left only for a sooner one: where it is in the list, and what it was sent. */
interface LeftModel {
  index: number
  adapter: ModelAdapter
  request: ChatRequest
  left: LeftForSooner
  /** Its entry in `causes`: replaced by its new one when the call goes back to it. */
  failure: ModelFailure
}

/**
 * The model left for a sooner one that the call goes back to: of those
 * whose wait still fits (`returnWaitMs`), the one expected to answer first
 * (its wait plus its recent latency), the earlier in the list on a tie;
 * with the others that fit, in list order, as its fallbacks.
 */
function nextReturn(
  state: CallState,
  left: readonly LeftModel[],
): { back: LeftModel; others: ModelAdapter[] } | undefined {
  let best: { model: LeftModel; expected: number } | undefined
  const returnable: LeftModel[] = []
  for (const model of left) {
    const waitMs = returnWaitMs(state, model.adapter, model.request, model.left)
    if (waitMs === undefined) continue
    returnable.push(model)
    const expected = Math.ceil(waitMs + (outlookOf(state, model.adapter).latencyMs ?? 0))
    if (best === undefined || expected < best.expected) best = { model, expected }
  }
  if (best === undefined) return undefined
  const back = best.model
  // Its fallbacks: only the others the call could go back to (one that
  // cannot, chosen as sooner, would end the call with this one unasked).
  return { back, others: returnable.filter((m) => m !== back).map((m) => m.adapter) }
}

/**
 * Whether a model's failure that ended the way down (`fail`: the last
 * model, or a rule that fails at once) still lets the call go back to a
 * model left for a sooner one: not a request every model refuses, nor an
 * overload under `priority: 'background'` (background work fails at once
 * and adds no load).
 */
function mayReturn(state: CallState, outcome: ModelOutcome & { kind: 'fail' }): boolean {
  const { error } = outcome
  if (isProviderError(error) && REQUEST_BOUND_KINDS.has(error.kind)) return false
  if (state.retry.priority === 'background' && isProviderError(error)) {
    return limitKindOf(error) !== 'overloaded'
  }
  return true
}

/** The error that ends the call after `last`, the final model's outcome, with every model's `causes`. */
function endedBy(
  state: CallState,
  last: ModelOutcome | undefined,
  causes: ModelFailure[],
  count: number,
): Error {
  if (last?.kind === 'fail') {
    const { error } = last
    if (isProviderError(error) && REQUEST_BOUND_KINDS.has(error.kind)) {
      return new RequestRejectedError({ error, attempts: state.attempts, causes })
    }
    // The budget could not afford the last model (those before it failed,
    // or did not fit either): the budget is what ended the call, and its
    // error names every model and why each gave up.
    if (isBudgetExceeded(error)) {
      return new BudgetExceededError({
        limitUsd: error.limitUsd,
        spentUsd: error.spentUsd,
        reservedUsd: error.reservedUsd,
        estimateUsd: error.estimateUsd,
        causes,
        cause: error,
      })
    }
    // Admission refused every model without sending: say when the
    // soonest of them can serve the request, whatever the list's order.
    if (isRateLimited(error) && causes.every((c) => isRateLimited(c.cause))) {
      return soonestRefusal(causes)
    }
    return new ModelUnavailableError({
      attempts: state.attempts,
      causes,
      lastCause: last.failure.cause,
      reason: last.failure.reason,
    })
  }
  const final = causes.at(-1)
  return new ModelUnavailableError({
    attempts: state.attempts,
    causes,
    lastCause: final?.cause,
    reason: `every model in the list failed (${count})`,
  })
}

/**
 * The request as `adapter` is sent it, made once per model: a signed thinking
 * block keeps its signature for the model that signed it (`signedBy`), and,
 * with no signer named (a history built by hand), for the primary and its
 * model again; every other model gets it stripped. A signature is valid only
 * for the model that issued it: by list position alone, a fallback's answer
 * in a tool loop went back to the primary with the fallback's signature
 * (Anthropic and Gemini refuse it: a 400 that goes to no fallback, on every
 * later turn), and to the fallback, reached again, without its own.
 */
function historyFor(
  request: ChatRequest,
  adapter: ModelAdapter,
  asPrimary: boolean,
  sentTo: Map<string, ChatRequest>,
): ChatRequest {
  const label = labelOf(adapter)
  let sent = sentTo.get(label)
  if (sent === undefined) {
    const messages = stripThinkingSignatures(request.messages, (block) =>
      block.signedBy === undefined ? asPrimary : block.signedBy === label,
    )
    sent = messages.every((m, i) => m === request.messages[i]) ? request : { ...request, messages }
    sentTo.set(label, sent)
  }
  return sent
}

/** The answer, its signed thinking blocks naming `adapter` as their signer. */
function signedBy(response: ChatResponse, adapter: ModelAdapter): ChatResponse {
  if (!response.content.some((block) => block.type === 'thinking' && block.signature)) {
    return response
  }
  const label = labelOf(adapter)
  return {
    ...response,
    content: response.content.map((block) =>
      block.type === 'thinking' && block.signature ? { ...block, signedBy: label } : block,
    ),
  }
}

/** The same provider's same model (a signature it issued is valid for both). */
function sameModel(a: ModelAdapter, b: ModelAdapter): boolean {
  return a.name === b.name && a.model === b.model
}
