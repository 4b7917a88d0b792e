import { anthropicErrors } from './errors/anthropicErrors.js'
import type { ErrorReply, ProviderDialect, ProviderRoute } from './types.js'

/**
 * Anthropic's 400 `invalid_request_error` for sampling settings the model
 * (or the API version) no longer takes, in its words; undefined otherwise.
 * The fake answered them 200, so a client or gateway that passed an OpenAI
 * client's `temperature` on (`0`, `0.7`: what most send by default) passed
 * against it and failed every call against the API:
 * - Opus 4.7 and later, and every Claude 5 model (`claude-opus-4-8`,
 *   `claude-sonnet-5`, `claude-opus-5`, `claude-fable-5`): "`temperature`
 *   is deprecated for this model." for any temperature but the default 1,
 *   and "`top_p` is deprecated for this model." for a `top_p` below 0.95
 *   (live answers with `req_011C…` ids in danielmiessler/Fabric#2109 and
 *   vogler75/monster-mq#168; probes of the live API in
 *   theopenco/llmgateway#3108 — `temperature: 1` and `top_p` ≥ 0.95 are
 *   taken — and earendil-works/pi#7961, where `claude-haiku-4-5` takes
 *   `temperature: 0`; router-for-me/CLIProxyAPI#4383 for `top_p`);
 * - Opus 4.1 to 4.6, Sonnet 4.5 and 4.6, Haiku 4.5: "`temperature` and
 *   `top_p` cannot both be specified for this model. Please use only one."
 *   (blacktop/ipsw#909, with a `req_011C…` id; Sonnet 4.6 in
 *   skydiscover-ai/skydiscover#15, Opus 4.1 in open-webui/functions#9);
 * - API version `2026-10-21` (the `anthropic-version` of the official SDKs
 *   since 1.0.0), on every model: `temperature`, `top_p` and `top_k` are
 *   removed, and a request that sends one is refused (platform.claude.com
 *   API versions, "2026-10-21"). The docs quote no message: the fake says
 *   what Anthropic's validator says of a field the request schema does not
 *   have ("…: Extra inputs are not permitted").
 * `null` reads as left out. Anthropic's own API only, as
 * `anthropicMaxTokensMissing`.
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
    const field = SAMPLING_FIELDS.find(sent)
    return field === undefined ? undefined : refuse(`${field}: Extra inputs are not permitted`)
  }
  const generation = modelGeneration(json['model'])
  if (generation === undefined) return undefined
  if (generation === 'deprecated') {
    if (sent('temperature') && json['temperature'] !== 1) {
      return refuse('`temperature` is deprecated for this model.')
    }
    const topP = json['top_p']
    if (sent('top_p') && !(typeof topP === 'number' && topP >= 0.95)) {
      return refuse('`top_p` is deprecated for this model.')
    }
    return undefined
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

/**
 * What the model takes of `temperature` and `top_p`: `deprecated` (Opus
 * 4.7 and later, any line from 5 on), `one` (Opus 4.1–4.6, Sonnet and Haiku
 * 4.5 and later 4.x), or undefined (both: Claude 3.x, Opus 4 and Sonnet 4,
 * a name that says no version). A date is no minor version:
 * `claude-sonnet-4-20250514` is Sonnet 4.
 */
function modelGeneration(model: unknown): 'deprecated' | 'one' | undefined {
  if (typeof model !== 'string') return undefined
  const match = /claude-(opus|sonnet|haiku|fable|mythos)-(\d+)(?:-(\d)(?!\d))?/.exec(model)
  if (match === null) return undefined
  const [, family, majorText, minorText] = match
  const major = Number(majorText)
  const minor = Number(minorText ?? 0)
  if (major >= 5 || (family === 'opus' && major === 4 && minor >= 7)) return 'deprecated'
  if (major !== 4) return undefined
  const since = family === 'opus' ? 1 : 5
  return minor >= since ? 'one' : undefined
}
