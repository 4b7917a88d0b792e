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
 * keys are ordered, never dropped: admission grants the first key free now
 * in this order (`chooseSlot`), so the keys this call has not seen refused
 * come first, in their configured order, and those it saw refused
 * (`refusedKeys`, in its order: a rate limit, a 401, a quota gone) after
 * them. A fresh free key is preferred — under `retireMs: 0` the key just
 * rejected, never retired, was handed out again and the call's other keys
 * never tried; after a `Retry-After: 0` the key just refused, its 0 ms
 * cooldown over, came first again — and a refused key is still there when
 * no fresh one is free. Dropped instead (three rounds of rules for when),
 * admission no longer saw a key the call needed: a key another instance
 * had cooled read as the only one, a 30 s rate limit while a refused key
 * was free; a key cooling until its quota came back, beside a retired one,
 * read as "every key retired". Kept, every key is in admission's choice,
 * its refusal names each one with its real cooldown or retirement.
 */
export function targetOf(
  adapter: ModelAdapter,
  refusedKeys?: ReadonlySet<string> | undefined,
  leftOut?: ReadonlySet<string> | undefined,
): AdmissionTarget {
  return {
    provider: adapter.name,
    endpoint: adapter.baseURL,
    keys: orderedKeys(keptKeys(adapter.apiKeys, leftOut), refusedKeys),
    model: adapter.model,
  }
}

/** `keys` but those in `leftOut`; all of them when none would be left. */
function keptKeys(
  keys: readonly string[],
  leftOut: ReadonlySet<string> | undefined,
): readonly string[] {
  if (leftOut === undefined || leftOut.size === 0) return keys
  const kept = keys.filter((key) => !leftOut.has(key))
  return kept.length === 0 ? keys : kept
}

/** `keys` with those in `refused` moved last, in `refused`'s order; the others keep theirs. */
function orderedKeys(
  keys: readonly string[],
  refused: ReadonlySet<string> | undefined,
): readonly string[] {
  if (refused === undefined || refused.size === 0) return keys
  const fresh = keys.filter((key) => !refused.has(key))
  if (fresh.length === keys.length) return keys
  const rank = new Map([...refused].map((key, i) => [key, i]))
  const late = keys
    .filter((key) => refused.has(key))
    .sort((a, b) => (rank.get(a) as number) - (rank.get(b) as number))
  return [...fresh, ...late]
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
  refusedKeys?: ReadonlySet<string> | undefined,
  leftOut?: ReadonlySet<string> | undefined,
): ModelOutlook {
  const forecast = state.admission?.forecast(targetOf(adapter, refusedKeys, leftOut))
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
