/**
 * A `response_format` schema as Anthropic's JSON outputs take it: the
 * constraints they refuse with a 400 ("Numerical constraints (minimum,
 * maximum, multipleOf, etc.)", "String constraints (minLength, maxLength)",
 * "Array constraints beyond minItems of 0 or 1", a string `format` not on
 * their list: platform.claude.com, "Structured outputs", JSON Schema
 * limitations) move into the `description` of the schema they were in, as
 * `{minimum: 1}`, and the root's `$schema` (which draft it is written in)
 * is left out — what Anthropic's own SDKs do to a schema before sending it
 * (`transformJSONSchema`, "How SDK transformation works"), and LiteLLM and
 * pydantic-ai after them. zod's `.min(1)`, which openai-node's
 * `zodResponseFormat` writes as `minimum` beside a `$schema`, was
 * Anthropic's 400 for every such request. The model is told the constraint
 * and not held to it: `.parse()` (openai-node's, the SDKs') checks the
 * answer against the whole schema. An object that lists its properties
 * and leaves `additionalProperties` out gets `false`, as the SDKs give every
 * object (`closable`): Anthropic takes no other. Everything else goes as it
 * is, and what Anthropic refuses of it (a recursive schema,
 * `additionalProperties` but `false`, an object that lists no properties
 * and leaves it out, `oneOf`) is its 400. A copy: the caller's schema is not
 * written to.
 */
export function anthropicJsonSchema(schema: object): object {
  return strictSchema(schema, true) as object
}

/** Keywords whose value is a map of schemas. */
const SCHEMA_MAPS = new Set(['properties', '$defs', 'definitions', 'patternProperties'])
/** Keywords whose value is a list of schemas. */
const SCHEMA_LISTS = new Set(['anyOf', 'allOf', 'oneOf', 'prefixItems'])
/** Keywords whose value is a schema. */
const SCHEMAS = new Set(['items', 'additionalProperties', 'not', 'if', 'then', 'else'])
/** Constraints Anthropic refuses whatever their value. */
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
/** The string formats Anthropic takes. */
const FORMATS = new Set([
  'date-time',
  'time',
  'date',
  'duration',
  'email',
  'hostname',
  'uri',
  'ipv4',
  'ipv6',
  'uuid',
])

function strictSchema(node: unknown, root: boolean): unknown {
  if (typeof node !== 'object' || node === null || Array.isArray(node)) return node
  const kept: [string, unknown][] = []
  const moved: string[] = []
  for (const [key, value] of Object.entries(node)) {
    if (root && key === '$schema') continue
    if (SCHEMA_MAPS.has(key) && isObject(value)) {
      const entries = Object.entries(value).map(([name, s]) => [name, strictSchema(s, false)])
      kept.push([key, Object.fromEntries(entries)])
    } else if (SCHEMA_LISTS.has(key) && Array.isArray(value)) {
      kept.push([key, value.map((s) => strictSchema(s, false))])
    } else if (SCHEMAS.has(key)) {
      kept.push([key, strictSchema(value, false)])
    } else if (refused(key, value)) {
      moved.push(`${key}: ${JSON.stringify(value)}`)
    } else {
      kept.push([key, value])
    }
  }
  // Built from entries: a `__proto__` key stays a field, as it came.
  const out = Object.fromEntries(kept) as Record<string, unknown>
  if (closable(out)) out['additionalProperties'] = false
  if (moved.length > 0) {
    const note = `{${moved.join(', ')}}`
    const own = out['description']
    out['description'] = typeof own === 'string' && own !== '' ? `${own}\n\n${note}` : note
  }
  return out
}

/**
 * An object that lists its properties and says nothing of others: Anthropic
 * takes an object only closed ("For 'object' type, 'additionalProperties'
 * must be explicitly set to false"), and OpenAI's `strict: false` schemas,
 * pydantic's and LangChain's leave it out. Closed, it asks the model for
 * the same fields, and the answer still holds to the caller's open schema.
 * Not one that lists none (`{type: "object"}`, a free-form map): closed,
 * its only answer is `{}` — the SDKs close it so, silently — and
 * Anthropic's 400 says what to change instead. An explicit `true` or a
 * schema (a map's values) is the caller's word, not overridden (the SDKs
 * drop it): Anthropic's 400.
 */
function closable(node: Record<string, unknown>): boolean {
  const properties = node['properties']
  return (
    !Object.hasOwn(node, 'additionalProperties') &&
    isObject(properties) &&
    Object.keys(properties).length > 0
  )
}

function refused(key: string, value: unknown): boolean {
  if (REFUSED.has(key)) return true
  if (key === 'minItems') return value !== 0 && value !== 1
  if (key === 'format') return typeof value === 'string' && !FORMATS.has(value)
  return false
}

function isObject(value: unknown): value is object {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
