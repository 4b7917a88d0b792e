import { InvalidChatRequestError } from '../errors/InvalidChatRequestError.js'
import { writtenAs } from './writtenAs.js'

/**
 * A `response_format` schema with `json_schema.description` as its own
 * top-level `description` — where JSON Schema says what a schema is for,
 * and so where Gemini and Anthropic, which have no field for it beside the
 * schema, read it. `schema` as it is without a description (`undefined`,
 * `null`), or when its own is the same. A description with no schema to
 * carry it (`provider` has no place for it), or beside a different one of
 * the schema's own (`provider` takes one), throws naming
 * `response_format.json_schema.description` instead of being dropped.
 * A schema with a `toJSON` is read as what that returns. A copy: the
 * caller's schema is not written to.
 */
export function schemaWithDescription(
  schema: unknown,
  description: unknown,
  provider: string,
): unknown {
  if (description === undefined || description === null) return schema
  // Read as JSON writes it, as it goes without a description: spread, a
  // schema class's `toJSON` (on its prototype) was lost and its raw fields
  // went to Gemini. The root's key, as JSON.stringify(schema) calls it.
  schema = writtenAs(schema, '')
  const field = 'response_format.json_schema.description'
  if (typeof schema !== 'object' || schema === null) {
    throw new InvalidChatRequestError(field, `${provider} has no place for it without a schema`)
  }
  const own = Object.hasOwn(schema, 'description')
    ? (schema as Record<string, unknown>)['description']
    : undefined
  if (own === description) return schema
  if (own !== undefined) {
    throw new InvalidChatRequestError(
      field,
      `${provider} takes one description, the schema's own, and the schema has another`,
    )
  }
  // A spread keeps a `__proto__` key a field, as it came.
  return { description, ...schema }
}
