import {
  InvalidChatRequestError,
  PROVIDER_REFUSES_VALUE,
} from '../../errors/InvalidChatRequestError.js'
import { claudeVersion } from './claudeVersion.js'
import { continuesUnthoughtTurn, type Turn } from './continuesUnthoughtTurn.js'

/**
 * A `reasoning_effort` but `none` to a model that does not think
 * (`takesThinking`) throws naming the field and the model: Anthropic answers
 * 400 "'claude-3-5-haiku-20241022' does not support thinking." to the
 * `thinking` it would turn on (anthropics/claude-code#2245), a bad request
 * no fallback follows. Not dropped: the caller asked for thinking this
 * model does not do. A request that continues a tool loop's unthought turn
 * sends no `thinking` on any model (`continuesUnthoughtTurn`), so it goes:
 * a loop that fell back to such a model mid-turn ends as it would on one
 * that thinks. A value only these models refuse (`provider_value`), so
 * called after every other check of the request, as `refuseModelSampling`.
 */
export function refuseModelThinking(model: string, effort: unknown, turns: readonly Turn[]): void {
  if (effort === undefined || effort === null || effort === 'none') return
  if (takesThinking(model) || continuesUnthoughtTurn(turns)) return
  throw new InvalidChatRequestError(
    'reasoning_effort',
    `${model} does not think (Anthropic's thinking came with Claude 3.7 Sonnet), got ${JSON.stringify(effort)}: leave reasoning_effort out, send "none", or use Claude 3.7 Sonnet or later`,
    PROVIDER_REFUSES_VALUE,
  )
}

/**
 * Claude 3.7 Sonnet and every later model, and a name that says no version
 * (`claude-sonnet-latest`, a proxy's alias: taken at its word). Claude 3
 * Opus, Sonnet and Haiku and 3.5 Sonnet and Haiku
 * (`claude-3-5-haiku-20241022`, `anthropic.claude-3-opus-20240229-v1:0`,
 * `claude-3-5-sonnet-v2@20241022`) do not (docs.claude.com, "Extended
 * thinking", supported models).
 */
export function takesThinking(model: string): boolean {
  const version = claudeVersion(model)
  if (version === undefined) return true
  return version.major > 3 || (version.major === 3 && version.minor >= 7)
}
