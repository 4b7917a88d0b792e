import type { z } from 'zod'
import { refuseUnknownGatewayOptions } from '../refuseUnknownGatewayOptions.js'
import { type ConfigProblem, GatewayConfigError } from './GatewayConfigError.js'
import { type GatewayConfig, gatewayConfigSchema } from './gatewayConfigSchema.js'

export interface ParseGatewayConfigOptions {
  /** Where `{ "env": NAME }` keys are looked up. Default `process.env`. */
  env?: Readonly<Record<string, string | undefined>> | undefined
  /** Named in the error message. */
  file?: string | undefined
}

/** Every option `parseGatewayConfig` reads (the type checker keeps the list whole). */
export const PARSE_OPTION_NAMES = Object.keys({
  env: true,
  file: true,
} satisfies Record<keyof ParseGatewayConfigOptions, true>)

/**
 * Validates a gateway config (already-parsed JSON) and fills in defaults.
 * Throws `GatewayConfigError` listing every problem by field path:
 * `providers.qwen.apiKeys[1]: expected a non-empty string`. Cross-references
 * (a fallback naming an unknown provider…) are checked in the same run, so
 * one error lists everything there is to fix.
 */
export function parseGatewayConfig(
  input: unknown,
  options: ParseGatewayConfigOptions = {},
): GatewayConfig {
  // Ignored, `{ envs: {…} }` looked the keys up in process.env instead.
  refuseUnknownGatewayOptions(options, PARSE_OPTION_NAMES, 'parseGatewayConfig()')
  // reportInput: only to tell a missing field from a wrong one; values are never printed.
  const result = schemaFor(options.env ?? process.env).safeParse(input, { reportInput: true })
  const reserved = reservedNames(input)
  if (result.success && reserved.length === 0) return result.data
  const problems = result.success ? [] : result.error.issues.flatMap(toProblems)
  throw new GatewayConfigError([...reserved, ...problems], { file: options.file })
}

/**
 * A provider, model or alias named `__proto__`: JSON.parse keeps it as a
 * key, but zod's records (like any object literal) drop it, so the entry
 * vanished without a word — "providers: expected at least one entry" for a
 * config that had one, or "unknown provider" for every fallback naming it.
 */
function reservedNames(input: unknown): ConfigProblem[] {
  const problems: ConfigProblem[] = []
  if (typeof input !== 'object' || input === null) return problems
  for (const section of ['providers', 'models', 'aliases']) {
    const entries = (input as Record<string, unknown>)[section]
    if (typeof entries === 'object' && entries !== null && Object.hasOwn(entries, '__proto__')) {
      problems.push({
        field: fieldPath([section, '__proto__']),
        message: 'a name JavaScript objects cannot hold: pick another',
      })
    }
  }
  return problems
}

/**
 * One schema per env object. Building one costs more than checking a config
 * with it (zod compiles each object schema on its first parse), and a program
 * that checks several configs (a reload, a test) passes the same env. Values
 * are still read from the env at parse time, so a changed variable is seen.
 */
const schemas = new WeakMap<object, ReturnType<typeof gatewayConfigSchema>>()

function schemaFor(env: NonNullable<ParseGatewayConfigOptions['env']>) {
  let schema = schemas.get(env)
  if (schema === undefined) {
    schema = gatewayConfigSchema(env)
    schemas.set(env, schema)
  }
  return schema
}

function toProblems(issue: z.core.$ZodIssue): ConfigProblem[] {
  if (issue.code === 'unrecognized_keys') {
    return issue.keys.map((key) => ({
      field: fieldPath([...issue.path, key]),
      message: 'unknown field (check the spelling)',
    }))
  }
  if (issue.code === 'invalid_key') {
    // A record key (a header name) that failed its own check: zod's message is
    // just "Invalid key in record"; the key's own issue says what is wrong.
    const inner = issue.issues[0]?.message
    return [{ field: fieldPath(issue.path), message: inner ?? 'invalid name' }]
  }
  if (issue.code === 'invalid_type' && issue.path.length === 0) {
    // The whole file is no object (`[]`, a string, `null`): zod's "Invalid
    // input: expected object, received array" said it in its own words.
    const input = (issue as { input?: unknown }).input
    const got = Array.isArray(input) ? 'an array' : input === null ? 'null' : `a ${typeof input}`
    return [
      {
        field: fieldPath(issue.path),
        message: `the config must be a JSON object ({ "providers": {…}, "models": {…} }), got ${got}`,
      },
    ]
  }
  // zod's messages can quote the input; never echo a value that may be a key.
  const message = issue.message.replace(/received .*/, (m) => m.slice(0, 40))
  const missing = issue.code === 'invalid_type' && 'input' in issue && issue.input === undefined
  return [{ field: fieldPath(issue.path), message: missing ? `required (${message})` : message }]
}

/** `['providers', 'qwen', 'apiKeys', 1]` → `providers.qwen.apiKeys[1]`. */
export function fieldPath(path: readonly PropertyKey[]): string {
  let out = ''
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`
    else {
      const name = String(part)
      out += /^[A-Za-z_$][\w$-]*$/.test(name)
        ? `${out === '' ? '' : '.'}${name}`
        : `[${JSON.stringify(name)}]`
    }
  }
  return out === '' ? '(root)' : out
}
