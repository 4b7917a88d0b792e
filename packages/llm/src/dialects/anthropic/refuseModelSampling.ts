import {
  InvalidChatRequestError,
  PROVIDER_REFUSES_VALUE,
} from '../../errors/InvalidChatRequestError.js'
import { claudeVersion } from './claudeVersion.js'

/**
 * What a Claude model refuses of the sampling settings where OpenAI and
 * older Claude take them (`provider_value`), each a 400 that goes to no
 * fallback. Refused before sending, naming the field and the model, never
 * dropped (as the Vercel AI SDK does, with a warning): the client asked for
 * a sampling the model would not do.
 *
 * - Opus 4.7 and later, and every Claude 5 model (`deprecatesSampling`),
 *   answer "`temperature` is deprecated for this model." to a temperature
 *   but the default 1, and "`top_p` is deprecated for this model." to any
 *   `top_p` — 0.97 and 1 included (platform.claude.com, "Migrating to
 *   Claude Opus 4.7"; danielmiessler/Fabric#2109, a live probe in
 *   mnfst/modelparams.dev#238). A temperature of 1, or a `top_p` of 0.99
 *   (their own), asks for what the model does anyway and is not sent (a
 *   `top_p` of 1 never is, see `buildAnthropicRequest`); any other value
 *   throws.
 * - Opus 4.1 to 4.6, Sonnet 4.5 and 4.6, Haiku 4.5 (`takesOneSampling`)
 *   answer "`temperature` and `top_p` cannot both be specified for this
 *   model." (blacktop/ipsw#909): with a neutral one already left out, two
 *   that both change sampling throw, naming `top_p`.
 *
 * Called after every other check of the request: thrown first, a refusal a
 * gateway skips for a fallback entry hid the request's own refusals from it.
 */
export function refuseModelSampling(model: string, body: Record<string, unknown>): void {
  if (deprecatesSampling(model)) {
    if (body['temperature'] === 1) delete body['temperature']
    // 0.99 is these models' own top_p (the thinking docs): the live probes
    // disagree on whether it is taken, and unsent it asks for the same.
    if (body['top_p'] === MODEL_DEFAULT_TOP_P) delete body['top_p']
    for (const [field, takes] of TAKEN) {
      const value = body[field]
      if (value === undefined) continue
      throw new InvalidChatRequestError(
        field,
        `${model} takes no ${takes} (Anthropic deprecated sampling settings from Claude Opus 4.7 on), got ${value}: leave it out`,
        PROVIDER_REFUSES_VALUE,
      )
    }
  } else if (
    takesOneSampling(model) &&
    body['temperature'] !== undefined &&
    body['top_p'] !== undefined
  ) {
    throw new InvalidChatRequestError(
      'top_p',
      `${model} takes temperature or top_p, not both (got ${body['temperature']} and ${body['top_p']}): leave one out`,
      PROVIDER_REFUSES_VALUE,
    )
  }
}

/** The `top_p` Opus 4.7 and later and the Claude 5 models sample with. */
const MODEL_DEFAULT_TOP_P = 0.99

/** What the models without sampling settings take of each: its default alone, or nothing. */
const TAKEN = [
  ['temperature', 'temperature but its default, 1'],
  ['top_p', 'top_p'],
] as const

/**
 * Opus 4.7 and later, any line from 5 on (`claude-sonnet-5`,
 * `claude-opus-5-5`, `claude-fable-5`, `anthropic.claude-opus-4-7`).
 */
export function deprecatesSampling(model: string): boolean {
  const version = claudeVersion(model)
  if (version === undefined) return false
  const { family, major, minor } = version
  return major >= 5 || (family === 'opus' && major === 4 && minor >= 7)
}

/**
 * The Claude 4 models from Opus 4.1 and Sonnet and Haiku 4.5 on (up to
 * `deprecatesSampling`'s). Opus and Sonnet 4 (`claude-sonnet-4-20250514`)
 * and Claude 3 take both.
 */
function takesOneSampling(model: string): boolean {
  const version = claudeVersion(model)
  if (version === undefined || version.major !== 4) return false
  return version.minor >= (version.family === 'opus' ? 1 : 5)
}
