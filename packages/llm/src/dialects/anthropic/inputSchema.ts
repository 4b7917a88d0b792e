import { writtenAs } from '../writtenAs.js'

/**
 * A tool's `parameters` as Anthropic's `input_schema`. Anthropic requires the
 * schema's top-level `type` and answers 400 "tools.N.custom.input_schema.type:
 * Field required" without it — a 400 never goes to a fallback — where OpenAI
 * takes a schema without one: `parameters: {}` (a tool with no arguments, as
 * OpenAI clients and MCP servers send it) or `{ properties: … }`. A schema
 * with no `type` describes an object's arguments, so it goes with
 * `type: 'object'` first; one that names its type goes as it is.
 */
export function anthropicInputSchema(parameters: Record<string, unknown>): Record<string, unknown> {
  const schema = writtenAs(parameters, 'input_schema') as Record<string, unknown>
  // None (a JavaScript caller, as OpenAI documents leaving it out: a tool
  // without arguments): the OpenAI dialect sends it so, and a fallback to
  // Anthropic must take the same tool.
  if (schema === undefined || schema === null) return { type: 'object' }
  // Not an object (a JavaScript caller's mistake): Anthropic's own 400 names it.
  if (typeof schema !== 'object' || Array.isArray(schema)) return schema
  if (schema['type'] !== undefined) return schema
  return { type: 'object', ...schema }
}
