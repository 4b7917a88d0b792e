import {
  InvalidChatRequestError,
  PROVIDER_REFUSES_VALUE,
} from '../../errors/InvalidChatRequestError.js'
import { claudeVersion } from './claudeVersion.js'

/**
 * A conversation that ends with the assistant's message (a prefill, for
 * Claude to continue) to a model that refuses one (`refusesPrefill`)
 * throws naming `messages` and the model: Anthropic's 400 ("This model does
 * not support assistant message prefill. The conversation must end with a
 * user message.") goes to no fallback. Thinking or not: turning it off does
 * not make these models take one. A value only they refuse
 * (`provider_value`: OpenAI and older Claude continue the turn), so called
 * after every other check of the request, as `refuseModelSampling`.
 */
export function refusePrefill(model: string, turns: readonly { role: string }[]): void {
  if (turns.at(-1)?.role !== 'assistant' || !refusesPrefill(model)) return
  throw new InvalidChatRequestError(
    'messages',
    `${model} takes no prefill (a last message of the assistant; Claude 4.6 and later refuse one): end with a user message`,
    PROVIDER_REFUSES_VALUE,
  )
}

/**
 * Claude 4.6 and later, any line: `claude-opus-4-6`, `claude-sonnet-4-6`,
 * `claude-opus-4-7`, `claude-sonnet-5` (anomalyco/opencode#13768,
 * cortexkit/magic-context#511). `claude-sonnet-4-5`, `claude-haiku-4-5`
 * and `claude-sonnet-4-20250514` (Sonnet 4) take one.
 */
export function refusesPrefill(model: string): boolean {
  const version = claudeVersion(model)
  if (version === undefined) return false
  return version.major > 4 || (version.major === 4 && version.minor >= 6)
}
