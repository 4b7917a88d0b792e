import { type ClaudeVersion, claudeVersion } from './claudeVersion.js'
import { anthropicErrors } from './errors/anthropicErrors.js'
import type { ErrorReply } from './types.js'

/**
 * Anthropic's 400 `invalid_request_error` for a `thinking.type` the model
 * does not take, in its words; undefined when it takes it (or `thinking` is
 * left out). The fake answered each 200 — with thinking, or without it when
 * the model always thinks — so a client that sent one passed against it and
 * failed every call against the API (platform.claude.com, "Troubleshooting
 * thinking": the rejected `thinking.type` values by model):
 * - a type that is none of the API's: its validator's "thinking: Input tag
 *   'on' found using 'type' does not match any of the expected tags: …" (a
 *   live answer naming `'enabled', 'disabled'` before `adaptive` came, in
 *   LiteLLM-on-Bedrock reports; the tags that came since follow them), or,
 *   with no `type`, "Unable to extract tag using discriminator 'type'" (and
 *   a `thinking` that is no object, `"adaptive"`, is no config at all);
 * - `enabled` or `adaptive` on a model that does not think at all — Claude
 *   3 Opus, Sonnet and Haiku, 3.5 Sonnet and Haiku: thinking came with 3.7
 *   Sonnet ("'claude-3-5-sonnet-20241022' does not support thinking.", a
 *   live 400 in anthropics/claude-code#2245; docs.claude.com, "Extended
 *   thinking", supported models). The fake thought on them;
 * - `adaptive` on the models that think only on a budget — Claude 3.7
 *   Sonnet, Sonnet 4 and 4.5, Opus 4 to 4.5, Haiku 4.5 and every earlier
 *   version: adaptive thinking came with Opus and Sonnet 4.6 (and Mythos
 *   Preview, which takes both): "\"thinking.type.adaptive\" is not supported
 *   for this model. Use \"thinking.type.enabled\" with budget_tokens."
 *   (earendil-works/pi#1534, openclaw/openclaw#67814: Sonnet 4.5 and 4.7
 *   were sent it and answered 400);
 * - `between_tools` anywhere but Sonnet 5.5 and later, the one model that
 *   takes it — in place of `disabled`, to turn off its up-front thinking
 *   ("\"thinking.type.between_tools\" is not supported for this model.",
 *   measured against every other model, Opus 5.5 and Fable among them) — and
 *   there at an `output_config.effort` above `high` ("What's new in Claude
 *   Sonnet 5.5": it runs at `low`, `medium` and `high` only);
 * - `disabled` on Sonnet 5.5 and later, in its own words, which name
 *   `between_tools` (its migration guide; the other models that always
 *   think are `anthropicThinkingRefused`'s).
 * A name that says no version (`claude-sonnet-latest`, `claude-mythos-preview`)
 * is taken at its word: only an unknown type is refused. A date is no
 * minor version: `claude-sonnet-4-20250514` is Sonnet 4. Anthropic's own
 * API only, as `anthropicThinkingRefused`, which asks this first.
 */
export function anthropicThinkingTypeRefused(
  json: Record<string, unknown>,
): ErrorReply | undefined {
  const thinking = json['thinking']
  if (thinking === undefined || thinking === null) return undefined
  if (typeof thinking !== 'object' || Array.isArray(thinking)) {
    return anthropicErrors.invalidRequest(
      'thinking: Input should be a valid dictionary or object to extract fields from',
    )
  }
  const type = (thinking as { type?: unknown }).type
  if (type === undefined || type === null) {
    return anthropicErrors.invalidRequest(
      "thinking: Unable to extract tag using discriminator 'type'",
    )
  }
  if (!THINKING_TYPES.includes(type as string)) {
    return anthropicErrors.invalidRequest(
      `thinking: Input tag '${String(type)}' found using 'type' does not match any of the expected tags: ${THINKING_TYPES.map((tag) => `'${tag}'`).join(', ')}`,
    )
  }
  const version = claudeVersion(json['model'])
  if ((type === 'enabled' || type === 'adaptive') && version !== undefined && !thinks(version)) {
    return anthropicErrors.invalidRequest(`'${String(json['model'])}' does not support thinking.`)
  }
  if (type === 'adaptive' && version !== undefined && !takesAdaptive(version)) {
    return anthropicErrors.invalidRequest(
      '"thinking.type.adaptive" is not supported for this model. Use "thinking.type.enabled" with budget_tokens.',
    )
  }
  if (version === undefined) return undefined
  if (type === 'disabled' && takesBetweenTools(version)) {
    return anthropicErrors.invalidRequest(
      '"thinking.type.disabled" is not supported for this model. Use "thinking.type.between_tools" for the lowest thinking setting, or "thinking.type.adaptive" and "output_config.effort" to control thinking behavior.',
    )
  }
  if (type !== 'between_tools') return undefined
  if (!takesBetweenTools(version)) {
    return anthropicErrors.invalidRequest(
      '"thinking.type.between_tools" is not supported for this model.',
    )
  }
  const effort = (json['output_config'] as { effort?: unknown } | null | undefined)?.effort
  if (effort === 'xhigh' || effort === 'max') {
    // between_tools is thinking turned off, and says so.
    return anthropicErrors.invalidRequest(
      `output_config.effort '${effort}' is not supported when thinking is disabled on this model. Use effort 'high' or below, or enable thinking.`,
    )
  }
  return undefined
}

/** The API's `thinking.type` tags, in the order they came. */
const THINKING_TYPES: readonly string[] = ['enabled', 'disabled', 'adaptive', 'between_tools']

/** Sonnet 5.5 and later Sonnets, which say so when they refuse `disabled`. */
function takesBetweenTools({ family, major, minor }: ClaudeVersion): boolean {
  return family === 'sonnet' && (major > 5 || (major === 5 && minor >= 5))
}

/** Claude 3.7 Sonnet and every model since: the first to think. */
function thinks({ major, minor }: ClaudeVersion): boolean {
  return major > 3 || (major === 3 && minor >= 7)
}

/** Opus and Sonnet 4.6 and later, every line from 5 on. */
function takesAdaptive({ major, minor }: ClaudeVersion): boolean {
  return major > 4 || (major === 4 && minor >= 6)
}
