import type { ModelAdapter } from '../adapters/ModelAdapter.js'
import type { AdmissionTarget } from '../admission/Admission.js'
import { earliest, type ModelOutlook } from '../retry/modelOutlook.js'
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

/** The remaining model expected to answer first (list order on a tie); undefined when none is left. */
export function earliestOf(
  state: CallState,
  models: readonly ModelAdapter[],
): ModelOutlook | undefined {
  return earliest(models.map((adapter) => outlookOf(state, adapter)))
}
