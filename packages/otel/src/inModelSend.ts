import { type ContextKey, readContext } from '@hourglass/core'

/**
 * The slot @hourglass/llm sets while it sends a model attempt (its
 * `MODEL_SEND`), found by the same global symbol: this package does not load
 * llm at run time.
 */
const MODEL_SEND: ContextKey<true> = { symbol: Symbol.for('@hourglass/llm.modelSend') }

/**
 * True when the work in progress is @hourglass/llm sending a model attempt:
 * an HTTP attempt @hourglass/fetch announces then is that model attempt's,
 * counted once, as `llm`, not also as an `http` call.
 */
export function inModelSend(): boolean {
  return readContext(MODEL_SEND) === true
}
