import { enforcedRemaining } from '@hourglass/core'
import type { ModelAdapter } from '../adapters/ModelAdapter.js'
import type { ProviderError } from '../errors/ProviderError.js'
import { clampAttempts, decideRetry } from '../retry/decideRetry.js'
import type { ChatRequest } from '../types.js'
import type { CallState } from './CallState.js'
import { affordable, targetOf, waitOf } from './outlook.js'

/**
 * Where a model stood when the call left it only because another model was
 * expected to answer sooner (a rate limit or overload with a wait, or
 * admission's refusal to wait for its cooldown): what a return to it,
 * once the models after it have failed, resumes — its attempts, overloads
 * and rejected keys count on, so `maxAttempts` and `max529Retries` hold
 * across the return. A 429 or an overload is neither processed nor billed:
 * asking that model again is safe, and it was never given up on for a
 * reason of its own. @internal
 */
export interface LeftForSooner {
  /** Attempts sent to it so far. */
  attempt: number
  overloads: number
  /** Whether its one `resendAfterFirstTokenTimeout` resend was used. */
  resent: boolean
  rejectedKeys: ReadonlySet<string>
  /** The keys a rate limit refused in the call, the longest ago first (tried after the others). */
  limitedKeys: ReadonlySet<string>
  /** The failure it was left after; undefined when admission refused it before an attempt. */
  error: ProviderError | undefined
  /** Whether that failure was retryable as the policy read it (a first-token timeout's resend). */
  retryable: boolean
  /** Whether admission holds its wait (a shared cooldown); else the call waits it out itself. */
  cooled: boolean
  /** When its own wait ends, on the call's clock (without admission). */
  readyAt: number
}

/**
 * The wait before the call may go back to a model it left for a sooner one
 * (`left`), now that no other model is left to answer, by the rules any
 * wait is taken by: `decideRetry` on the failure it was left after (the
 * deadline and `minAttemptMs`, `maxAttempts`, overloads, the retry budget,
 * `maxRetryAfterMs`), the model's wait read again (admission's cooldown
 * now, else what is left of its own), and the cost budget's check before
 * sending. Undefined when it cannot be asked again within them: it stays
 * given up on, and the call ends as it did without it.
 */
export function returnWaitMs(
  state: CallState,
  adapter: ModelAdapter,
  request: ChatRequest,
  left: LeftForSooner,
): number | undefined {
  const { retry, deadline, admission } = state
  const budget = state.options.limits?.budget ?? undefined
  if (budget !== undefined && !affordable(budget, adapter, request)) return undefined
  const forecast = left.cooled
    ? admission?.forecast(targetOf(adapter, left.rejectedKeys))
    : undefined
  const waitMs =
    forecast === undefined ? Math.max(0, left.readyAt - state.clock.now()) : waitOf(forecast)
  const remainingMs = enforcedRemaining(deadline)
  const maxAttempts = clampAttempts(retry.maxAttempts)
  const { error } = left
  if (error === undefined) {
    // Refused by admission before an attempt: no failure to decide on, only
    // the attempts left and the deadline (as admission would weigh the wait).
    const minAttemptMs = Math.max(0, retry.minAttemptMs ?? 0)
    const fits =
      left.attempt < maxAttempts &&
      Number.isFinite(waitMs) &&
      waitMs < remainingMs &&
      waitMs + minAttemptMs <= remainingMs
    return fits ? waitMs : undefined
  }
  // As after the failure itself (`attemptsOn`): a limit admission holds
  // adds no load while it does, so the retry budget does not gate it.
  const held = left.cooled && error.retryAfterMs !== 0
  const decision = decideRetry({
    ...retry.delay,
    error:
      left.retryable === error.retryable
        ? error.normalized
        : { ...error.normalized, retryable: left.retryable },
    attempt: left.attempt,
    maxAttempts,
    overloads: left.overloads,
    max529Retries: retry.max529Retries,
    priority: retry.priority,
    remainingMs,
    minAttemptMs: retry.minAttemptMs,
    maxRetryAfterMs: retry.maxRetryAfterMs,
    hasFallback: false,
    retryBudget: held ? undefined : state.retryBudgets?.forProvider(adapter),
    waitMs,
    latencyMs: forecast?.latencyMs,
  })
  return decision.action === 'retry' ? decision.delayMs : undefined
}
