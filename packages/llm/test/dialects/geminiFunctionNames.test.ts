import { describe, expect, it } from 'vitest'
import { dialects } from '../../src/dialects/dialects.js'
import { isInvalidChatRequest } from '../../src/errors/InvalidChatRequestError.js'

/**
 * Gemini answers 400 to a function declared with a name that does not start
 * with a letter or an underscore ("Invalid function name. Must start with a
 * letter or an underscore. Must be alphameric (a-z, A-Z, 0-9), underscores
 * (_), dots (.) or dashes (-), with a maximum length of 64": CherryHQ/cherry-studio
 * #4088, generativelanguage.googleapis.com) — names OpenAI takes
 * (`^[a-zA-Z0-9_-]{1,64}$`), as MCP servers make them (`1password_read`).
 * A 400 goes to no fallback: refused before anything is sent, naming the tool.
 */

function build(names: string[]) {
  return dialects.gemini.buildRequest(
    {
      maxTokens: 10,
      messages: [{ role: 'user', content: 'hi' }],
      tools: names.map((name) => ({ name, parameters: { type: 'object' } })),
    },
    'gemini-2.5-flash',
  ).body as { tools: { functionDeclarations: { name: string }[] }[] }
}

function refusal(names: string[]): { field: string; message: string } | undefined {
  try {
    build(names)
    return undefined
  } catch (error) {
    if (!isInvalidChatRequest(error)) throw error
    return { field: error.field, message: error.message }
  }
}

describe('Gemini function names', () => {
  it('go as they are when Gemini takes them', () => {
    const names = ['get_weather', '_private', 'a-b', 'ns.tool', 'mcp:read', `f${'x'.repeat(63)}`]
    const declared = build(names).tools[0]?.functionDeclarations.map((d) => d.name)
    expect(declared).toEqual(names)
  })

  it('are refused, naming the tool, when they start with a digit or a dash', () => {
    expect(refusal(['ok', '1password_read'])).toEqual({
      field: 'tools[1].function.name',
      message: expect.stringContaining('must start with a letter or an underscore'),
    })
    expect(refusal(['-x'])?.field).toBe('tools[0].function.name')
    expect(refusal(['3d_render'])?.message).toContain('"3d_render"')
  })

  it('are refused when they hold a character or a length Gemini does not take', () => {
    expect(refusal(['get weather'])?.field).toBe('tools[0].function.name')
    expect(refusal([`f${'x'.repeat(64)}`])?.field).toBe('tools[0].function.name')
    expect(refusal([''])?.field).toBe('tools[0].function.name')
  })
})
