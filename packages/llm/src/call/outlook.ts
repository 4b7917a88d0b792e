import type { ModelAdapter } from '../adapters/ModelAdapter.js'
import type { AdmissionTarget } from '../admission/Admission.js'
import type { CostBudget } from '../budget/CostBudget.js'
import { isBudgetExceeded } from '../errors/BudgetExceededError.js'
import { earliest, type ModelOutlook } from '../retry/modelOutlook.js'
import type { ChatRequest } from '../types.js'
import type { CallState } from './CallState.js'

/** `model@provider`, as reasons name a model. */
export function labelOf(adapter: ModelAdapter): string {
  return `${adapter.model}@${adapter.name}`
}

/** What admission keeps apart: provider name, base URL, keys, model. */
export function targetOf(adapter: ModelAdapter): AdmissionTarget {
  return {
    provider: adapter.name,
    endpoint: adapter.baseURL,
    keys: adapter.apiKeys,
    model: adapter.model,
  }
}

/**
 * What this process knows of `adapter`'s next answer: its cooldown and recent
 * latency from admission; without admission nothing is known, so it is
 * assumed to answer at once.
 */
export function outlookOf(state: CallState, adapter: ModelAdapter): ModelOutlook {
  const forecast = state.admission?.forecast(targetOf(adapter))
  return {
    label: labelOf(adapter),
    waitMs: forecast?.waitMs ?? 0,
    latencyMs: forecast?.latencyMs,
  }
}

/**
 * The remaining model expected to answer first (list order on a tie);
 * undefined when none is left. Only the models the cost budget can afford
 * for `request` now count: one it cannot is skipped with nothing sent, so it
 * answers nothing. Counted, it was "expected to answer at once" (no latency
 * history), and a rate limit on the primary whose wait fitted the deadline
 * fell back to it at once — to fail with `BudgetExceededError` in
 * milliseconds, the primary never asked again.
 */
export function earliestOf(
  state: CallState,
  models: readonly ModelAdapter[],
  request: ChatRequest,
): ModelOutlook | undefined {
  const outlooks = models.map((adapter) => outlookOf(state, adapter))
  const budget = state.options.limits?.budget ?? undefined
  if (budget === undefined) return earliest(outlooks)
  // The earliest first, then the next while the budget refuses them: the
  // estimate reads the whole prompt, so it is made for as few models as can be.
  const left = [...outlooks]
  for (;;) {
    const best = earliest(left)
    if (best === undefined) return undefined
    const index = outlooks.indexOf(best)
    if (affordable(budget, models[index] as ModelAdapter, request)) return best
    left.splice(left.indexOf(best), 1)
  }
}

/** Whether `budget` can afford an attempt of `request` on `adapter` now (what its check before sending asks). */
function affordable(budget: CostBudget, adapter: ModelAdapter, request: ChatRequest): boolean {
  try {
    budget.assertCanSpend(budget.estimate(adapter.model, request, adapter.name))
    return true
  } catch (refused) {
    // Anything but the budget's refusal is for that model's own check to say.
    return !isBudgetExceeded(refused)
  }
}
