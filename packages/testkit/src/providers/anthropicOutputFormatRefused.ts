import { claudeVersion } from './claudeVersion.js'
import { anthropicErrors } from './errors/anthropicErrors.js'
import type { ErrorReply } from './types.js'

/**
 * Anthropic's 400 `invalid_request_error` for JSON outputs
 * (`output_config.format`) it does not take; undefined when it takes them (or
 * none is asked for). The fake answered each 200, so a client that sent a
 * malformed format passed against it and failed every call against the API
 * (platform.claude.com, "Structured outputs"; `JSONOutputFormat` in the
 * SDKs: `{type: "json_schema", schema}` and nothing else):
 * - a format that is no object, a `type` but `json_schema`, a `schema`
 *   missing or no object, a field beside them (OpenAI's `name`, `strict`, a
 *   `json_schema` wrapper): the validator's words;
 * - a schema with a constraint JSON outputs do not take ("Numerical
 *   constraints (minimum, maximum, multipleOf, etc.)", "String constraints
 *   (minLength, maxLength)", "Array constraints beyond minItems of 0 or 1":
 *   "If you use an unsupported feature, you'll receive a 400 error with
 *   details"; laravel/ai#715, zod's `.min()` refused), or
 *   `additionalProperties` but `false`;
 * - a model without structured outputs: the Claude 3 models, Claude Sonnet
 *   4 and Opus 4 (Opus 4.1 and the Claude 4.5 models have them);
 * - a prefill (the last message the assistant's), which JSON outputs do not
 *   go beside ("Incompatible with … message prefilling").
 * The words of the last two are this fake's own (none of Anthropic's was
 * seen), naming the field. A name that says no version
 * (`claude-sonnet-latest`) is taken at its word. Anthropic's own API only,
 * as `anthropicThinkingRefused`, which asks this.
 */
export function anthropicOutputFormatRefused(
  json: Record<string, unknown>,
): ErrorReply | undefined {
  const config = json['output_config']
  if (typeof config !== 'object' || config === null) return undefined
  const format = (config as { format?: unknown }).format
  if (format === undefined || format === null) return undefined
  const refuse = (message: string) => anthropicErrors.invalidRequest(message)
  if (typeof format !== 'object' || Array.isArray(format)) {
    return refuse(`output_config.format: ${NOT_OBJECT}`)
  }
  const fields = format as Record<string, unknown>
  if (fields['type'] === undefined) return refuse('output_config.format.type: Field required')
  if (fields['type'] !== 'json_schema') {
    return refuse("output_config.format.type: Input should be 'json_schema'")
  }
  const schema = fields['schema']
  if (schema === undefined) return refuse('output_config.format.schema: Field required')
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) {
    return refuse(`output_config.format.schema: ${NOT_OBJECT}`)
  }
  const extra = Object.keys(fields).find((key) => key !== 'type' && key !== 'schema')
  if (extra !== undefined) {
    return refuse(`output_config.format.${extra}: Extra inputs are not permitted`)
  }
  const unsupported = unsupportedKeyword(schema, 'output_config.format.schema')
  if (unsupported !== undefined) {
    return refuse(
      `${unsupported}: this JSON Schema feature is not supported in structured outputs.`,
    )
  }
  if (!takesOutputFormat(json['model'])) {
    return refuse(
      `output_config.format: '${String(json['model'])}' does not support structured outputs.`,
    )
  }
  const messages = json['messages']
  if (
    Array.isArray(messages) &&
    (messages.at(-1) as { role?: unknown } | null)?.role === 'assistant'
  ) {
    return refuse(
      'output_config.format: structured outputs cannot be used with a prefill (a final assistant message). The conversation must end with a user message.',
    )
  }
  return undefined
}

const NOT_OBJECT = 'Input should be a valid dictionary or object to extract fields from'

/** Opus 4.1, the Claude 4.5 models and every later one; a name that says no version. */
function takesOutputFormat(model: unknown): boolean {
  const version = claudeVersion(model)
  if (version === undefined) return true
  const { family, major, minor } = version
  if (major !== 4) return major > 4
  return minor >= 5 || (family === 'opus' && minor === 1)
}

const SCHEMA_MAPS = new Set(['properties', '$defs', 'definitions'])
const SCHEMA_LISTS = new Set(['anyOf', 'allOf'])
const REFUSED = new Set([
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
  'minLength',
  'maxLength',
  'maxItems',
  'uniqueItems',
])

/** The path of the first keyword of `node` (a schema) JSON outputs refuse. */
function unsupportedKeyword(node: unknown, path: string): string | undefined {
  if (typeof node !== 'object' || node === null || Array.isArray(node)) return undefined
  for (const [key, value] of Object.entries(node)) {
    const at = `${path}.${key}`
    if (REFUSED.has(key)) return at
    if (key === 'minItems' && value !== 0 && value !== 1) return at
    if (key === 'additionalProperties' && value !== false) return at
    let found: string | undefined
    if (SCHEMA_MAPS.has(key) && typeof value === 'object' && value !== null) {
      for (const [name, s] of Object.entries(value)) {
        found ??= unsupportedKeyword(s, `${at}.${name}`)
      }
    } else if (SCHEMA_LISTS.has(key) && Array.isArray(value)) {
      value.forEach((s, i) => {
        found ??= unsupportedKeyword(s, `${at}.${i}`)
      })
    } else if (key === 'items') {
      found = unsupportedKeyword(value, at)
    }
    if (found !== undefined) return found
  }
  return undefined
}
