import {
  InvalidChatRequestError,
  PROVIDER_REFUSES_VALUE,
} from '../../errors/InvalidChatRequestError.js'
import { geminiVersion } from './geminiVersion.js'

/**
 * A presence or frequency penalty (but 0, never sent) to Gemini 2.5 and
 * later throws naming the client's field and the model: those models
 * answer 400 "Penalty is not enabled for models/gemini-2.5-flash"
 * (vercel/ai#8943 for 2.5 Pro and Flash; Ikalus1988/MisakaNet#1473 for
 * Gemini 3.7 and 3.8 Flash; google-gemini/cookbook#1290: "on every tested
 * model"), a bad request no fallback follows; Gemini 2.0 Flash takes one.
 * Not dropped: the caller asked for less repetition the model would not
 * give. A value only these models refuse (`provider_value`), so called
 * after every other check of the request, as `refuseGeminiFunctionNames`.
 * A name that says no version (a tuned model) goes as before.
 */
export function refuseGeminiPenalties(
  model: string,
  generationConfig: Record<string, unknown>,
): void {
  if (!refusesPenalties(model)) return
  for (const [field, name] of PENALTIES) {
    const value = generationConfig[name]
    if (value === undefined) continue
    throw new InvalidChatRequestError(
      field,
      `${model} takes no ${field} (Gemini 2.5 and later answer "Penalty is not enabled for this model"), got ${String(value)}: leave it out`,
      PROVIDER_REFUSES_VALUE,
    )
  }
}

/** Chat Completions name → `generationConfig` name. */
const PENALTIES = [
  ['presence_penalty', 'presencePenalty'],
  ['frequency_penalty', 'frequencyPenalty'],
] as const

/** Gemini 2.5 and later (`gemini-2.5-flash`, `models/gemini-3.7-flash`, `gemini-4-neon`). */
function refusesPenalties(model: string): boolean {
  const version = geminiVersion(model)
  if (version === undefined) return false
  return version.major > 2 || (version.major === 2 && version.minor >= 5)
}
