import type { Deadline } from '@hourglass/core'
import type { ModelAdapter } from '../adapters/ModelAdapter.js'
import type { Admission } from '../admission/Admission.js'
import type { CostBudget } from '../budget/CostBudget.js'
import type { Priority } from '../retry/decideRetry.js'
import type { RetryBudgetRegistry } from '../retry/RetryBudgetRegistry.js'
import type { RetryDelayOptions } from '../retry/retryDelay.js'
import type { ChatMessage, ChatRequest } from '../types.js'
import type { AttemptRecord } from './AttemptRecord.js'

/** Shrinks a history that no longer fits the context window. May be async (a summarising model call). */
export type MessageReducer = (messages: ChatMessage[]) => ChatMessage[] | Promise<ChatMessage[]>

/** When another attempt is made, and how long before it. */
export interface RetryOptions {
  /** Attempts per model, the first included. Default 3; clamped to 1–10. */
  maxAttempts?: number | undefined
  /** Retries after an overload (529/503), foreground only. Default 3; 0 = fall back on the first overload. */
  max529Retries?: number | undefined
  /** `'background'` fails at once on overload instead of adding load. Default `'foreground'`. */
  priority?: Priority | undefined
  /** Backoff, jitter and overload-floor settings, and the random source (see `retryDelay`). */
  delay?: RetryDelayOptions | undefined
  /** Least time an attempt needs, in ms: a wait that leaves less is not slept. Default 0. */
  minAttemptMs?: number | undefined
  /**
   * The longest server-requested wait (`retry-after-ms`, `Retry-After`,
   * reset headers, Gemini's `retryDelay`) waited out before a retry of the
   * same model, in ms. A failure whose server asks for longer is not retried
   * on that model, deadline or not: the call falls back to the next model, or
   * fails naming the wait (unless another key of the provider is free now).
   * Default 60000, as @hourglass/fetch; a finite number ≥ 0. The shared
   * cooldown such a hint starts is capped by the admission's own
   * `maxRetryAfterMs` (same default).
   */
  maxRetryAfterMs?: number | undefined
  /**
   * One retry budget per provider name, so a 429 storm cannot multiply
   * itself. Default: the process-wide `defaultRetryBudgets()`; `false` = none.
   */
  budgets?: RetryBudgetRegistry | false | undefined
  /**
   * Allow one resend to the same model after a first-token timeout — only for
   * providers you know deduplicate or do not bill an unanswered request.
   * Default false.
   */
  resendAfterFirstTokenTimeout?: boolean | undefined
}

/** What a call may take from shared limits before it sends. */
export interface CallLimits {
  /**
   * Shared per provider + base URL + key cooldowns, RPM/TPM limits and
   * latencies: acquired before every attempt, told every outcome. Default:
   * the process-wide `defaultAdmission()`; `false` = none (each call waits
   * out its own limits).
   */
  admission?: Admission | false | undefined
  /** Checked before every attempt (nothing is sent when over), charged with the usage after. */
  budget?: CostBudget | undefined
}

/** What is tried before a prompt-too-long or a max_tokens stop surfaces. */
export interface RecoveryOptions {
  /** prompt_too_long, first step: drop or fold old context. Default: none. */
  collapse?: MessageReducer | undefined
  /** prompt_too_long, second step: compact the history (e.g. summarise). Default: none. */
  compact?: MessageReducer | undefined
  /** max_tokens stop: the cap is raised once, ×2 up to this many tokens. Default 2 × `request.maxTokens`; 0 = never raise. */
  maxTokensCeiling?: number | undefined
  /** Recovery steps after a max_tokens stop (raise the cap, then continue). Default 3; 0 = surface at once. */
  maxRecoveries?: number | undefined
}

export interface CallModelOptions {
  /** The primary model first, then the fallbacks, in order. At least one. */
  models: readonly ModelAdapter[]
  request: ChatRequest
  /** Bounds the whole call, waits included. Default `currentDeadline()`; none = no time limit; `false` = none, not even the ambient one (as in core). */
  deadline?: Deadline | false | undefined
  /** Aborts the call; the attempt in flight is cancelled. */
  signal?: AbortSignal | undefined
  /**
   * Streams: longest wait from sending to the first token, in ms. SSE comments
   * (`: keep-alive`) and bookkeeping events do not count. Past it the attempt
   * is a `timeout`: not resent to the same model (the provider may already
   * be generating, and billing), only to a fallback. Default 0 = no limit of
   * its own.
   */
  firstTokenTimeoutMs?: number | undefined
  /**
   * Sent as `Idempotency-Key` on every attempt and fallback of this call.
   * Derive it from the operation (`idempotencyKey({ conversationId, turn })`).
   * Default: a random UUID per call.
   */
  idempotencyKey?: string | undefined
  /** Carried into every attempt record, so a prompt change shows up in the logs. */
  promptVersion?: string | undefined
  /** Called after every attempt with its record (exceptions it throws are ignored). */
  onAttempt?: ((record: AttemptRecord) => void) | undefined
  /** Attempts, waits and the retry budgets. */
  retry?: RetryOptions | undefined
  /** Admission (cooldowns, RPM/TPM) and the cost budget. */
  limits?: CallLimits | undefined
  /** Prompt-too-long and max_tokens recovery. */
  recovery?: RecoveryOptions | undefined
}
