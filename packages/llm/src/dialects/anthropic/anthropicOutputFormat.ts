import { InvalidChatRequestError } from '../../errors/InvalidChatRequestError.js'
import { anthropicJsonSchema } from './anthropicJsonSchema.js'

/**
 * `response_format` → Anthropic's JSON outputs, `output_config.format: {type:
 * "json_schema", schema}` (platform.claude.com, "Structured outputs";
 * `JSONOutputFormat` in the SDKs, which has those two fields and no more):
 * undefined for `text`, the default. The answer's text is the JSON, so an
 * OpenAI client reads it as `message.content` (and `.parse()` as
 * `message.parsed`).
 *
 * - `json_schema.schema` goes with the constraints Anthropic refuses
 *   (`minimum`, `maxLength`…) moved into descriptions, as its SDKs send it
 *   (`anthropicJsonSchema`); what else it refuses (a recursive schema,
 *   `additionalProperties` but `false`) is its 400, naming the feature. A
 *   missing schema throws: Anthropic has no JSON without one.
 * - `json_schema.name` is the schema's label to OpenAI, and Anthropic has
 *   none: not sent (a name asks for nothing the schema does not say).
 * - `json_schema.description` becomes the schema's top-level
 *   `description`, where JSON Schema says what a schema is for (as for
 *   Gemini); beside a different one of the schema's own, it throws.
 * - `json_schema.strict`: Anthropic's JSON outputs always hold to the
 *   schema (constrained decoding); `true` asks for just that, and `false`
 *   (OpenAI's best effort) is given more than it asked. Not sent.
 * - `json_object` (JSON with no schema) throws: Anthropic has no such mode.
 *
 * Which models take it is `refuseModelOutputFormat`'s, last.
 */
export function anthropicOutputFormat(value: unknown): Record<string, unknown> | undefined {
  const type = (value as { type?: unknown }).type
  if (type === 'text') return undefined
  if (type === 'json_object') {
    throw new InvalidChatRequestError(
      'response_format.type',
      'Anthropic has no JSON mode without a schema ("json_object"): send type "json_schema" with a schema',
    )
  }
  if (type !== 'json_schema') {
    throw new InvalidChatRequestError('response_format', 'Anthropic has no equivalent of this type')
  }
  const format = ((value as { json_schema?: unknown }).json_schema ?? {}) as JsonSchemaFormat
  const { schema, description } = format
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) {
    throw new InvalidChatRequestError(
      'response_format.json_schema.schema',
      'Anthropic needs a JSON Schema object for JSON outputs (it has no JSON mode without one)',
    )
  }
  return { type: 'json_schema', schema: anthropicJsonSchema(withDescription(schema, description)) }
}

interface JsonSchemaFormat {
  schema?: unknown
  description?: unknown
}

function withDescription(schema: object, description: unknown): object {
  if (description === undefined || description === null) return schema
  const own = Object.hasOwn(schema, 'description')
    ? (schema as Record<string, unknown>)['description']
    : undefined
  if (own === description) return schema
  if (own !== undefined) {
    throw new InvalidChatRequestError(
      'response_format.json_schema.description',
      "Anthropic takes one description, the schema's own, and the schema has another",
    )
  }
  // A copy: the caller's schema is not written to. A spread keeps a `__proto__` key a field.
  return { description, ...schema }
}
