import type { ModelAdapter } from '../adapters/ModelAdapter.js'
import type { Admission, AdmissionForecast, AdmissionTarget } from '../admission/Admission.js'
import type { CostBudget } from '../budget/CostBudget.js'
import { isBudgetExceeded } from '../errors/BudgetExceededError.js'
import { earliest, type ModelOutlook } from '../retry/modelOutlook.js'
import type { ChatRequest } from '../types.js'
import type { CallState } from './CallState.js'

/** `model@provider`, as reasons name a model. */
export function labelOf(adapter: ModelAdapter): string {
  return `${adapter.model}@${adapter.name}`
}

/**
 * What admission keeps apart: provider name, base URL, keys, model. The
 * keys this call saw rejected (`rejectedKeys`: a 401, a quota gone) are
 * left out unless admission holds them back on their own, longer than the
 * provider as a whole: it hands them out when it retires none
 * (`retireMs: 0`, "never retire"), and the call's retries "to the next key"
 * went out with the rejected one, its other keys never tried. One admission
 * holds back on its own (retired, or cooling until its quota comes back)
 * stays: admission skips it, or waits for it, and names it in its refusal
 * as before. When none would be left, all of them.
 */
export function targetOf(
  adapter: ModelAdapter,
  rejectedKeys?: ReadonlySet<string> | undefined,
  admission?: Admission | undefined,
): AdmissionTarget {
  return {
    provider: adapter.name,
    endpoint: adapter.baseURL,
    keys: keysLeft(adapter, rejectedKeys, admission),
    model: adapter.model,
  }
}

/**
 * `adapter`'s keys but those in `rejected` that `admission` holds back no
 * longer than it holds back the provider as a whole (nothing of their own).
 */
function keysLeft(
  adapter: ModelAdapter,
  rejected: ReadonlySet<string> | undefined,
  admission: Admission | undefined,
): readonly string[] {
  const keys = adapter.apiKeys
  if (rejected === undefined || rejected.size === 0 || admission === undefined) return keys
  const waitFor = (some: readonly string[]) =>
    admission.forecast({
      provider: adapter.name,
      endpoint: adapter.baseURL,
      keys: some,
      model: adapter.model,
    }).waitMs
  // The provider-wide wait (an overload's cooldown, which every key's own
  // forecast carries): no keys is admission's lane of the provider's slot.
  const providerWaitMs = waitFor([])
  // Held back on its own, not merely with the provider: an overload's
  // cooldown is the whole provider's, so a rejected key's forecast carried
  // it too — kept, it was the first key handed out when the cooldown ended,
  // and refused again (under `retireMs: 0` the call failed, its good key
  // free). Not compared with the other keys' wait: a key whose quota comes
  // back in 30 s beside a retired one (Infinity), or one cooling longer,
  // was dropped, and admission's refusal was "every key retired" instead of
  // the rate limit naming its wait. A retired key (Infinity) stays:
  // admission's refusal names every key.
  const left = keys.filter((key) => !rejected.has(key) || waitFor([key]) > providerWaitMs)
  return left.length > 0 ? left : keys
}

/**
 * Whether admission has a key of `adapter` free now other than `sentKey`
 * (the one just refused) and those the call saw rejected: the model is then
 * as ready as before the failure. Not admission's wait for the model being
 * 0: a zero-length cooldown (`Retry-After: 0`, or no hint and the caller's
 * `retry.delay` giving 0 ms) leaves the refused key granted as a probe, so
 * the wait was 0 with one key.
 */
export function otherKeyFree(
  admission: Admission,
  adapter: ModelAdapter,
  sentKey: string | undefined,
  rejected: ReadonlySet<string>,
): boolean {
  const keys = adapter.apiKeys.filter((key) => key !== sentKey && !rejected.has(key))
  if (keys.length === 0) return false
  const forecast = admission.forecast({
    provider: adapter.name,
    endpoint: adapter.baseURL,
    keys,
    model: adapter.model,
  })
  return waitOf(forecast) === 0
}

/**
 * What this process knows of `adapter`'s next answer: its cooldown (or its
 * `ProviderLimits` window known full, whichever frees later) and recent
 * latency from admission; without admission nothing is known, so it is
 * assumed to answer at once.
 */
export function outlookOf(
  state: CallState,
  adapter: ModelAdapter,
  rejectedKeys?: ReadonlySet<string> | undefined,
): ModelOutlook {
  const forecast = state.admission?.forecast(targetOf(adapter, rejectedKeys, state.admission))
  return {
    label: labelOf(adapter),
    waitMs: forecast === undefined ? 0 : waitOf(forecast),
    latencyMs: forecast?.latencyMs,
  }
}

/**
 * How long until admission lets a request to the model go: its key's wait,
 * or its provider's limits window known full, whichever ends later (it waits
 * for both).
 */
export function waitOf(forecast: AdmissionForecast): number {
  const { waitMs, windowFullMs } = forecast
  return windowFullMs === undefined ? waitMs : Math.max(waitMs, windowFullMs)
}

/**
 * The remaining model expected to answer first (list order on a tie);
 * undefined when none is left. Only the models the cost budget can afford
 * for `request` now count: one it cannot is skipped with nothing sent, so it
 * answers nothing. Counted, it was "expected to answer at once" (no latency
 * history), and a rate limit on the primary whose wait fitted the deadline
 * fell back to it at once — to fail with `BudgetExceededError` in
 * milliseconds, the primary never asked again.
 *
 * With `built` (the stream flag the attempts use), a model that cannot build
 * the request (`adapter.prepare` throws: `InvalidChatRequestError`, a field
 * its dialect refuses) does not count either, nor does any model after it in
 * the list: the call would end at that model with the builder's error (a
 * request that cannot be translated is never handed on), so the primary's
 * short rate limit ended the call instead of being waited out. Left out
 * (undefined) where no wait is in view — before an attempt on a model that
 * is not cooling — so a healthy call builds no fallback's request.
 */
export function earliestOf(
  state: CallState,
  models: readonly ModelAdapter[],
  request: ChatRequest,
  built?: { stream: boolean } | undefined,
): ModelOutlook | undefined {
  const outlooks = models.map((adapter) => outlookOf(state, adapter))
  const budget = state.options.limits?.budget ?? undefined
  if (budget === undefined && built === undefined) return earliest(outlooks)
  // The earliest first, then the next while one is refused: the estimate
  // reads the whole prompt and a build translates it, so each is made for
  // as few models as can be.
  let left = [...outlooks]
  // Models checked to build the request, from the first in `later` on.
  let buildable = 0
  for (;;) {
    const best = earliest(left)
    if (best === undefined) return undefined
    const index = outlooks.indexOf(best)
    if (budget !== undefined && !affordable(budget, models[index] as ModelAdapter, request)) {
      left.splice(left.indexOf(best), 1)
      continue
    }
    if (built !== undefined) {
      // Every model up to this one must take it: the call goes through them in order.
      while (buildable <= index && canBuild(models[buildable] as ModelAdapter, request, built)) {
        buildable++
      }
      if (buildable <= index) {
        const reach = buildable
        left = left.filter((outlook) => outlooks.indexOf(outlook) < reach)
        continue
      }
    }
    return best
  }
}

/**
 * Whether `adapter` can build `request`: what `runModel` asks before its
 * first attempt (`prepare`; an adapter without it is assumed to). Only the
 * refusal is kept; the attempt builds again (for a fallback, from the
 * request with thinking signatures stripped).
 */
function canBuild(
  adapter: ModelAdapter,
  request: ChatRequest,
  built: { stream: boolean },
): boolean {
  if (adapter.prepare === undefined) return true
  try {
    adapter.prepare(request, built.stream)
    return true
  } catch {
    return false
  }
}

/** Whether `budget` can afford an attempt of `request` on `adapter` now (what its check before sending asks). */
export function affordable(
  budget: CostBudget,
  adapter: ModelAdapter,
  request: ChatRequest,
): boolean {
  try {
    budget.assertCanSpend(
      budget.estimate(adapter.model, request, adapter.name, adapter.dialect.name),
    )
    return true
  } catch (refused) {
    // Anything but the budget's refusal is for that model's own check to say.
    return !isBudgetExceeded(refused)
  }
}
