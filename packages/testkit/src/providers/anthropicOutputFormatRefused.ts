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
 *   details"; laravel/ai#715, zod's `.min()` refused), a keyword not on
 *   their list (`oneOf`, `not`, `prefixItems`), a string `format` not on
 *   theirs, `additionalProperties` but `false` (and so whatever is under
 *   it), or a recursive schema (a `$ref` cycle, as zod's recursive schemas
 *   write: "Recursive schemas" are not supported);
 * - an object that leaves `additionalProperties` out ("must be set to
 *   `false` for objects"), in the API's words;
 * - a model without structured outputs: the Claude 3 models, Claude Sonnet
 *   4, Opus 4 and Opus 4.1 (the Claude 4.5 models and later have them; Opus
 *   4.1 had them in beta only);
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
  const unsupported =
    unsupportedKeyword(schema, 'output_config.format.schema') ??
    recursiveRef(schema, 'output_config.format.schema')
  if (unsupported !== undefined) {
    return refuse(
      `${unsupported}: this JSON Schema feature is not supported in structured outputs.`,
    )
  }
  if (hasOpenObject(schema)) {
    return refuse(
      "output_config.format.schema: For 'object' type, 'additionalProperties' must be explicitly set to false",
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

/**
 * The Claude 4.5 models and every later one; a name that says no version.
 * Not Opus 4.1, which had structured outputs in beta only (`output_format`
 * behind a beta header): the generally available feature names Opus 4.6,
 * Sonnet 4.6, Sonnet 4.5, Opus 4.5 and Haiku 4.5.
 */
function takesOutputFormat(model: unknown): boolean {
  const version = claudeVersion(model)
  if (version === undefined) return true
  const { major, minor } = version
  if (major !== 4) return major > 4
  return minor >= 5
}

const SCHEMA_MAPS = new Set(['properties', '$defs', 'definitions'])
const SCHEMA_LISTS = new Set(['anyOf', 'allOf'])
/**
 * Keywords refused whatever their value: the constraints, and what is not
 * on the list of what JSON outputs take (`oneOf`, `not`, `prefixItems`:
 * zod's discriminated unions, negations and tuples).
 */
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
  'oneOf',
  'not',
  'prefixItems',
])
/** The string formats JSON outputs take. */
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

/** The path of the first keyword of `node` (a schema) JSON outputs refuse. */
function unsupportedKeyword(node: unknown, path: string): string | undefined {
  if (!isObject(node)) return undefined
  for (const [key, value] of Object.entries(node)) {
    const at = `${path}.${key}`
    if (REFUSED.has(key)) return at
    if (key === 'minItems' && value !== 0 && value !== 1) return at
    // A schema of its own is refused, and so whatever is under it.
    if (key === 'additionalProperties' && value !== false) return at
    if (key === 'format' && typeof value === 'string' && !FORMATS.has(value)) return at
    let found: string | undefined
    for (const [name, s] of subschemas(key, value)) found ??= unsupportedKeyword(s, `${at}${name}`)
    if (found !== undefined) return found
  }
  return undefined
}

/**
 * Whether `node` (a schema) holds an object that leaves
 * `additionalProperties` out: JSON outputs take an object only closed
 * (OpenAI's `strict: false` schemas, pydantic's and LangChain's leave it
 * out, and were answered 200). The API's words name the schema, not the
 * object (ax-llm/ax#458, veryfront/veryfront-code#3918).
 */
function hasOpenObject(node: unknown): boolean {
  if (!isObject(node)) return false
  const fields = node as Record<string, unknown>
  const type = fields['type']
  const object = type === 'object' || (Array.isArray(type) && type.includes('object'))
  if (object && !Object.hasOwn(fields, 'additionalProperties')) return true
  return Object.entries(fields).some(([key, value]) =>
    subschemas(key, value).some(([, s]) => hasOpenObject(s)),
  )
}

/** The schemas under `key` of a schema, each with its path below `key`. */
function subschemas(key: string, value: unknown): [string, unknown][] {
  if (SCHEMA_MAPS.has(key) && isObject(value)) {
    return Object.entries(value).map(([name, s]) => [`.${name}`, s])
  }
  if (SCHEMA_LISTS.has(key) && Array.isArray(value)) return value.map((s, i) => [`.${i}`, s])
  if (key === 'items') return [['', value]]
  return []
}

/**
 * The path of the first `$ref` that closes a cycle — a schema that holds
 * itself (zod's recursive schemas: `#/definitions/Node` under `Node`, a
 * `$ref: "#"` to the root) — which JSON outputs refuse ("Recursive schemas":
 * not supported). Each `$ref` to this schema (`#`, `#/…`) is followed; one
 * to a schema it is already inside is the cycle. A definition used twice
 * is no cycle.
 */
function recursiveRef(root: object, base: string): string | undefined {
  const open = new Set<object>()
  const done = new Set<object>()
  const walk = (node: unknown, path: string): string | undefined => {
    if (!isObject(node) || done.has(node)) return undefined
    open.add(node)
    let found: string | undefined
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string') {
        const target = resolveRef(root, value)
        if (target === undefined) continue
        if (open.has(target.schema)) found = `${path}.$ref`
        else found = walk(target.schema, `${base}${target.path}`)
      } else {
        for (const [name, s] of subschemas(key, value)) found ??= walk(s, `${path}.${key}${name}`)
      }
      if (found !== undefined) break
    }
    open.delete(node)
    done.add(node)
    return found
  }
  return walk(root, base)
}

/** The schema a local `$ref` (`#`, `#/$defs/Node`) points at, with its path; undefined for any other. */
function resolveRef(root: object, ref: string): { schema: object; path: string } | undefined {
  if (ref !== '#' && !ref.startsWith('#/')) return undefined
  let schema: unknown = root
  let path = ''
  for (const part of ref === '#' ? [] : ref.slice(2).split('/')) {
    const key = decodeURIComponent(part).replaceAll('~1', '/').replaceAll('~0', '~')
    if (!isObject(schema) || !Object.hasOwn(schema, key)) return undefined
    schema = (schema as Record<string, unknown>)[key]
    path += `.${key}`
  }
  return isObject(schema) ? { schema, path } : undefined
}

function isObject(value: unknown): value is object {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
