import {
  InvalidChatRequestError,
  PROVIDER_REFUSES_VALUE,
} from '../../errors/InvalidChatRequestError.js'

/**
 * The `reasoning_effort`s a Gemini model answers 400 to, as
 * `geminiThinkingConfig` maps them (as Google's own OpenAI layer does),
 * thrown naming the field and the model: each a bad request no fallback
 * follows. Not moved to a level the model has: the caller asked for an
 * amount of thinking this model does not do (less, or more and billed).
 *
 * - `none` (a `thinkingBudget` of 0) to Gemini 2.5 Pro, whose thinking
 *   cannot be turned off: "Budget 0 is invalid. This model only works in
 *   thinking mode." (its least budget is 128:
 *   ai.google.dev/gemini-api/docs/thinking, "Thinking budgets";
 *   vercel/ai#8027, snailyp/gemini-balance#206). Gemini 2.5 Flash takes it.
 *
 * Not refused: `medium` to `gemini-3-pro-preview`. Gemini 3 Pro answered it
 * 400 "Thinking level MEDIUM is not supported for this model." until its
 * shutdown (2026-03-09); the name is served by Gemini 3.1 Pro since, which
 * has `medium` (big-AGI#1082, chatwise-releases#1327: "cannot reproduce").
 *
 * Values only these models refuse (`provider_value`), so called after every
 * other check of the request, as `refuseGeminiFunctionNames`.
 */
export function refuseModelThinking(
  model: string,
  generationConfig: Record<string, unknown>,
): void {
  const thinking = generationConfig['thinkingConfig'] as
    | { thinkingBudget?: unknown; thinkingLevel?: unknown }
    | undefined
  if (thinking === undefined) return
  if (thinking.thinkingBudget === 0 && /^(?:models\/)?gemini-2\.5-pro(?:-|$)/.test(model)) {
    throw new InvalidChatRequestError(
      'reasoning_effort',
      `${model} always thinks (Gemini 2.5 Pro's thinking cannot be turned off), got "none": leave reasoning_effort out, or send "low" for its least thinking`,
      PROVIDER_REFUSES_VALUE,
    )
  }
}
