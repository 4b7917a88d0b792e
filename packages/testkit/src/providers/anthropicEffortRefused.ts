import { claudeVersion } from './claudeVersion.js'
import { anthropicErrors } from './errors/anthropicErrors.js'
import type { ErrorReply } from './types.js'

/**
 * Anthropic's 400 `invalid_request_error` for an `output_config.effort` the
 * model does not take; undefined when it takes it (or sends none). The fake
 * answered each 200, so a client that sent `max` to Opus 4.5, or `xhigh` to
 * Opus 4.6, passed against it and failed every call against the API
 * (platform.claude.com, "Effort", its levels by model):
 * - no effort at all before Opus 4.5, nor on Sonnet and Haiku 4.5: "This
 *   model does not support the effort parameter." (a live 400 in
 *   anthropics/claude-code#30010);
 * - `max` from Claude 4.6 on (Opus and Sonnet 4.6, Opus 4.7 and later, the
 *   Claude 5 models): not on Opus 4.5, which takes `low`, `medium` and `high`;
 * - `xhigh` from Opus 4.7 on (Opus 4.7 and 4.8, the Claude 5 models): not on
 *   Opus or Sonnet 4.6.
 * The message for a level the model lacks is this fake's own words (none
 * of Anthropic's was seen), naming the field and the level. A level that
 * is none of the API's is its validator's 400 wherever it is sent. A name
 * that says no version (`claude-sonnet-latest`, `claude-mythos-preview`)
 * is taken at its word: only an unknown level is refused. Anthropic's own
 * API only, as `anthropicThinkingRefused`, which asks this.
 */
export function anthropicEffortRefused(json: Record<string, unknown>): ErrorReply | undefined {
  const config = json['output_config']
  if (typeof config !== 'object' || config === null) return undefined
  const effort = (config as { effort?: unknown }).effort
  if (effort === undefined || effort === null) return undefined
  if (typeof effort !== 'string' || !LEVELS.includes(effort)) {
    return anthropicErrors.invalidRequest(
      "output_config.effort: Input should be 'low', 'medium', 'high', 'xhigh' or 'max'",
    )
  }
  const version = claudeVersion(json['model'])
  if (version === undefined) return undefined
  const { family, major, minor } = version
  const since = (m: number, n: number) => major > m || (major === m && minor >= n)
  const opus45 = family === 'opus' && major === 4 && minor === 5
  if (!since(4, 6) && !opus45) {
    return anthropicErrors.invalidRequest('This model does not support the effort parameter.')
  }
  if ((effort === 'max' && !since(4, 6)) || (effort === 'xhigh' && !since(4, 7))) {
    return anthropicErrors.invalidRequest(
      `output_config.effort '${effort}' is not supported for this model.`,
    )
  }
  return undefined
}

const LEVELS = ['low', 'medium', 'high', 'xhigh', 'max']
