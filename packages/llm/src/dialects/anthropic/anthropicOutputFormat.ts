import { InvalidChatRequestError } from '../../errors/InvalidChatRequestError.js'
import { schemaWithDescription } from '../schemaWithDescription.js'
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
 *   (`minimum`, `maxLength`…) moved into descriptions, as its SDKs send it,
 *   and each object that lists its properties closed
 *   (`additionalProperties: false`, which Anthropic requires) where it left
 *   that out (`anthropicJsonSchema`); what else it refuses (a recursive
 *   schema, an open object, `additionalProperties` but `false`) is its 400,
 *   naming the feature. A missing schema throws: Anthropic has no JSON
 *   without one.
 * - `json_schema.name` is the schema's label to OpenAI, and Anthropic has
 *   none: not sent (a name asks for nothing the schema does not say).
 * - `json_schema.description` becomes the schema's top-level
 *   `description`, where JSON Schema says what a schema is for (as for
 *   Gemini, `schemaWithDescription`); beside a different one of the
 *   schema's own, it throws.
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
  const schema = writtenSchema(format.schema)
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) {
    throw new InvalidChatRequestError(
      SCHEMA,
      'Anthropic needs a JSON Schema object for JSON outputs (it has no JSON mode without one)',
    )
  }
  const described = schemaWithDescription(schema, format.description, 'Anthropic') as object
  return { type: 'json_schema', schema: anthropicJsonSchema(described) }
}

interface JsonSchemaFormat {
  schema?: unknown
  description?: unknown
}

const SCHEMA = 'response_format.json_schema.schema'

/**
 * `schema` as JSON writes it, at every level: what each `toJSON` returns
 * (a library user's schema class), as the OpenAI dialect sends it and
 * Anthropic's SDKs read a schema (`transformJSONSchema` deep-clones it
 * through JSON first). Walked as it was, a class's raw fields went to
 * Anthropic instead. One JSON cannot write — a BigInt, a cycle, nesting
 * past the stack — throws naming the schema (what else a `toJSON` throws
 * is the caller's own, and stays as thrown).
 */
function writtenSchema(schema: unknown): unknown {
  if (schema === undefined) return undefined
  let text: string | undefined
  try {
    text = JSON.stringify(schema)
  } catch (thrown) {
    const why = unwritable(thrown)
    if (why === undefined) throw thrown
    const problem = `the schema cannot be sent as JSON: ${why}`
    throw new InvalidChatRequestError(SCHEMA, problem, undefined, { cause: thrown })
  }
  // A `toJSON` that returns undefined writes nothing: no schema.
  return text === undefined ? undefined : JSON.parse(text)
}

/** Why JSON.stringify threw, in the words `unwritableRequest` uses; undefined for another error. */
function unwritable(thrown: unknown): string | undefined {
  if (thrown instanceof RangeError && /call stack/i.test(thrown.message)) {
    return 'it is nested deeper than JSON.stringify can write'
  }
  if (!(thrown instanceof TypeError)) return undefined
  if (/serialize a BigInt/i.test(thrown.message)) {
    return 'it holds a BigInt (write it as a string, or a number when it fits)'
  }
  if (/circular structure/i.test(thrown.message)) return 'it refers to itself'
  return undefined
}
