import { describe, expect, it } from 'vitest'
import { dialects } from '../../src/dialects/dialects.js'
import type { ToolDefinition } from '../../src/types.js'

// Anthropic answers 400 "tools.0.custom.input_schema.type: Field required" to
// a tool whose schema has no top-level type; OpenAI takes `parameters: {}`.
describe('Anthropic input_schema', () => {
  const build = (tools: ToolDefinition[]) =>
    dialects.anthropic.buildRequest(
      { maxTokens: 10, messages: [{ role: 'user', content: 'hi' }], tools },
      'claude-sonnet-4-5',
    ).body['tools'] as Array<{ name: string; input_schema: unknown }>

  it('gives a schema without a type the object type (a tool with no arguments, OpenAI style)', () => {
    const tools = build([
      { name: 'now', parameters: {} },
      { name: 'find', parameters: { properties: { q: { type: 'string' } }, required: ['q'] } },
    ])
    expect(tools.map((t) => t.input_schema)).toEqual([
      { type: 'object' },
      { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
    ])
  })

  it('gives a tool without parameters (a JavaScript caller, as OpenAI allows) the object type', () => {
    const tools = build([
      { name: 'none' } as unknown as ToolDefinition,
      { name: 'null', parameters: null } as unknown as ToolDefinition,
    ])
    expect(tools.map((t) => t.input_schema)).toEqual([{ type: 'object' }, { type: 'object' }])
  })

  it('sends a schema that names its type as it is, and leaves the caller’s object alone', () => {
    const parameters = { type: 'object', properties: {} }
    const empty = {}
    const tools = build([
      { name: 'a', parameters },
      { name: 'b', parameters: empty },
    ])
    expect(tools[0]?.input_schema).toBe(parameters)
    expect(empty).toEqual({})
  })
})
