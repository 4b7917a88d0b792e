import { claudeVersion } from './claudeVersion.js'
import { anthropicErrors } from './errors/anthropicErrors.js'
import type { ErrorReply, ProviderDialect, ProviderRoute } from './types.js'

/**
 * Anthropic's 400 `invalid_request_error` for sampling settings the model
 * (or the API version) no longer takes, in its words; undefined otherwise.
 * The fake answered them 200, so a client or gateway that passed an OpenAI
 * client's `temperature` on (`0`, `0.7`: what most send by default) passed
 * against it and failed every call against the API:
 * - Opus 4.7 and later, and every Claude 5 model (`claude-opus-4-8`,
 *   `claude-sonnet-5`, `claude-opus-5`, `claude-fable-5`), a sampling
 *   setting at any value but its default (platform.claude.com, "Migrating
 *   to Claude Opus 4.7", and the thinking docs' "Sampling parameters":
 *   `temperature` 1, `top_p` 0.99, `top_k` none): "`temperature` is
 *   deprecated for this model." (live answers with `req_011C…` ids in
 *   danielmiessler/Fabric#2109 and vogler75/monster-mq#168;
 *   theopenco/llmgateway#3108: `temperature: 1` is taken), "`top_p` is
 *   deprecated for this model." (router-for-me/CLIProxyAPI#4383; a live
 *   probe in mnfst/modelparams.dev#238 met it for 0.5, 0.97 and 1 alike —
 *   the fake had taken any `top_p` from 0.95, as llmgateway#3108 reported),
 *   "`top_k` is deprecated for this model." (the fake took any). And the
 *   two together, "even at their defaults" (the thinking docs), are the
 *   "cannot both be specified" 400 below;
 * - Opus 4.1 to 4.6, Sonnet 4.5 and 4.6, Haiku 4.5: "`temperature` and
 *   `top_p` cannot both be specified for this model. Please use only one."
 *   (blacktop/ipsw#909, with a `req_011C…` id; Sonnet 4.6 in
 *   skydiscover-ai/skydiscover#15, Opus 4.1 in open-webui/functions#9);
 * - API version `2026-10-21` (sent by the official SDKs from the major
 *   version that adopted it: TypeScript and PHP 1.0.0, Python, Go and Ruby
 *   2.0.0, Java 3.0.0, C# 13.0.0), on every model: `temperature`, `top_p`
 *   and `top_k` are removed from the request schema, and a request that has
 *   one is refused — `null` too, a key the schema does not have whatever
 *   its value (platform.claude.com, "Migrating to API version
 *   2026-10-21"). The docs quote no message: the fake says what Anthropic's
 *   validator says of a field the request schema does not have ("…: Extra
 *   inputs are not permitted").
 * Under the older versions `null` reads as left out. Anthropic's own API
 * only, as `anthropicMaxTokensMissing`.
 */
export function anthropicSamplingRefused(
  dialect: ProviderDialect,
  route: ProviderRoute,
  body: unknown,
  headers: Record<string, string> = {},
): ErrorReply | undefined {
  if (dialect !== 'anthropic' || route !== 'anthropic-messages') return undefined
  if (typeof body !== 'object' || body === null) return undefined
  const json = body as Record<string, unknown>
  const sent = (field: string) => json[field] !== undefined && json[field] !== null
  const refuse = (message: string) => anthropicErrors.invalidRequest(message)
  if (headers['anthropic-version'] === SAMPLING_REMOVED_VERSION) {
    const field = SAMPLING_FIELDS.find((name) => Object.hasOwn(json, name))
    return field === undefined ? undefined : refuse(`${field}: Extra inputs are not permitted`)
  }
  const generation = modelGeneration(json['model'])
  if (generation === undefined) return undefined
  if (generation === 'deprecated') {
    if (sent('temperature') && json['temperature'] !== 1) {
      return refuse('`temperature` is deprecated for this model.')
    }
    if (sent('top_p') && json['top_p'] !== DEFAULT_TOP_P) {
      return refuse('`top_p` is deprecated for this model.')
    }
    if (sent('top_k')) return refuse('`top_k` is deprecated for this model.')
  }
  if (sent('temperature') && sent('top_p')) {
    return refuse(
      '`temperature` and `top_p` cannot both be specified for this model. Please use only one.',
    )
  }
  return undefined
}

/** The API version without sampling settings (platform.claude.com, API versions). */
const SAMPLING_REMOVED_VERSION = '2026-10-21'

const SAMPLING_FIELDS = ['temperature', 'top_p', 'top_k'] as const

/** The `top_p` the models without sampling settings run at, the one they take (the thinking docs). */
const DEFAULT_TOP_P = 0.99

/**
 * What the model takes of `temperature` and `top_p`: `deprecated` (Opus
 * 4.7 and later, any line from 5 on), `one` (Opus 4.1–4.6, Sonnet and Haiku
 * 4.5 and later 4.x), or undefined (both: Claude 3.x, Opus 4 and Sonnet 4,
 * a name that says no version). A date is no minor version:
 * `claude-sonnet-4-20250514` is Sonnet 4.
 */
function modelGeneration(model: unknown): 'deprecated' | 'one' | undefined {
  const version = claudeVersion(model)
  if (version === undefined) return undefined
  const { family, major, minor } = version
  if (major >= 5 || (family === 'opus' && major === 4 && minor >= 7)) return 'deprecated'
  if (major !== 4) return undefined
  const since = family === 'opus' ? 1 : 5
  return minor >= since ? 'one' : undefined
}
