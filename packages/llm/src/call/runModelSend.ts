import { type ContextKey, runWithContext } from '@hourglass/core'

/**
 * Set while a model attempt is being sent. @hourglass/otel reads it when
 * @hourglass/fetch announces an HTTP attempt, and leaves the HTTP attempts
 * made for a model attempt out of its `http` call counts: the model attempt
 * is counted once, as `llm`. A global symbol, not `contextKey()`: otel finds
 * it without loading this package.
 */
export const MODEL_SEND: ContextKey<true> = { symbol: Symbol.for('@hourglass/llm.modelSend') }

/** Runs one model attempt's send with `MODEL_SEND` set (one context frame per attempt). */
export function runModelSend<R>(send: () => R): R {
  return runWithContext(MODEL_SEND, true, send)
}
