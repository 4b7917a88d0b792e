import type { ModelAdapter } from '../adapters/ModelAdapter.js'
import { requestedServiceTier } from '../budget/requestedServiceTier.js'
import { BudgetExceededError, isBudgetExceeded } from '../errors/BudgetExceededError.js'
import { REQUEST_BOUND_KINDS } from '../errors/errorKinds.js'
import type { ModelFailure } from '../errors/ModelFailure.js'
import { ModelUnavailableError } from '../errors/ModelUnavailableError.js'
import { isProviderError } from '../errors/ProviderError.js'
import { isRateLimited } from '../errors/RateLimitedError.js'
import { RequestRejectedError } from '../errors/RequestRejectedError.js'
import type { ChatRequest, ChatResponse } from '../types.js'
import type { CallState } from './CallState.js'
import type { StreamSink } from './ModelStream.js'
import { labelOf } from './outlook.js'
import { runModel } from './runModel.js'
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
 */
export async function runModels(
  state: CallState,
  request: ChatRequest,
  idempotencyKey: string,
  sink: StreamSink | undefined,
): Promise<ChatResponse> {
  const models = state.options.models
  const causes: ModelFailure[] = []
  let stripped: ChatRequest | undefined
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
  for (const [index, adapter] of models.entries()) {
    const asPrimary = index === 0 || sameModel(adapter, primary)
    if (!asPrimary) stripped ??= { ...request, messages: stripThinkingSignatures(request.messages) }
    const outcome = await runModel(
      state,
      adapter,
      asPrimary ? request : (stripped as ChatRequest),
      idempotencyKey,
      models.slice(index + 1),
      arrival,
      sink,
    )
    if (outcome.kind === 'success') return outcome.response
    causes.push(outcome.failure)
    arrival = `fallback from ${labelOf(adapter)}: ${outcome.failure.reason}`
    if (outcome.kind === 'fail') {
      const { error } = outcome
      if (isProviderError(error) && REQUEST_BOUND_KINDS.has(error.kind)) {
        throw new RequestRejectedError({ error, attempts: state.attempts, causes })
      }
      // The budget could not afford the last model (those before it failed,
      // or did not fit either): the budget is what ended the call, and its
      // error names every model and why each gave up.
      if (isBudgetExceeded(error)) {
        throw new BudgetExceededError({
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
        throw soonestRefusal(causes)
      }
      throw new ModelUnavailableError({
        attempts: state.attempts,
        causes,
        lastCause: outcome.failure.cause,
        reason: outcome.failure.reason,
      })
    }
  }
  const last = causes.at(-1)
  throw new ModelUnavailableError({
    attempts: state.attempts,
    causes,
    lastCause: last?.cause,
    reason: `every model in the list failed (${models.length})`,
  })
}

/** The same provider's same model (a signature it issued is valid for both). */
function sameModel(a: ModelAdapter, b: ModelAdapter): boolean {
  return a.name === b.name && a.model === b.model
}
