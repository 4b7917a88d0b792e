import {
  InvalidChatRequestError,
  PROVIDER_REFUSES_VALUE,
} from '../../errors/InvalidChatRequestError.js'
import { claudeVersion } from './claudeVersion.js'

/**
 * JSON outputs (`output_config.format`, from a `response_format` schema,
 * `anthropicOutputFormat`) to a model that has none (`takesOutputFormat`)
 * throws naming `response_format` and the model, and so does one beside a
 * prefill (a last message of the assistant's): Anthropic answers both 400
 * ("Incompatible with … message prefilling", platform.claude.com,
 * "Structured outputs", feature compatibility), a bad request no fallback
 * follows. Not sent without the schema: the caller asked for JSON that
 * holds to it. A value only these models refuse (`provider_value`: OpenAI
 * and Gemini take it), so called after every other check of the request,
 * as `refuseModelSampling`: a gateway checking a fallback list skips such
 * a model rather than refuse a request its first model takes.
 */
export function refuseModelOutputFormat(
  model: string,
  body: Readonly<Record<string, unknown>>,
  turns: readonly { role: string }[],
): void {
  const config = body['output_config'] as { format?: unknown } | undefined
  if (config?.format === undefined) return
  if (!takesOutputFormat(model)) {
    throw new InvalidChatRequestError(
      'response_format',
      `${model} has no structured outputs (Anthropic's came with the Claude 4.5 models): leave response_format out, or use Claude Sonnet 4.5, Haiku 4.5, Opus 4.5 or later`,
      PROVIDER_REFUSES_VALUE,
    )
  }
  if (turns.at(-1)?.role === 'assistant') {
    throw new InvalidChatRequestError(
      'response_format',
      `Anthropic takes no prefill (a last message of the assistant) with structured outputs (a response_format schema): end with a user message`,
      PROVIDER_REFUSES_VALUE,
    )
  }
}

/**
 * The Claude 4.5 models and every later one, and a name that says no
 * version (`claude-sonnet-latest`, a proxy's alias: taken at its word).
 * Not the Claude 3 models, nor Claude Sonnet 4 and Opus 4
 * (`claude-sonnet-4-20250514`: a date is no minor version), nor Opus 4.1:
 * it had them in beta only (the `output_format` field behind a beta
 * header, neither of which is sent), and the generally available feature
 * names Opus 4.6, Sonnet 4.6, Sonnet 4.5, Opus 4.5 and Haiku 4.5
 * (platform.claude.com, "Structured outputs").
 */
export function takesOutputFormat(model: string): boolean {
  const version = claudeVersion(model)
  if (version === undefined) return true
  const { major, minor } = version
  if (major !== 4) return major > 4
  return minor >= 5
}
