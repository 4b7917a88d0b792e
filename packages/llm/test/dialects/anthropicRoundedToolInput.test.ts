import { describe, expect, it } from 'vitest'
import { parseAnthropicResponse } from '../../src/dialects/anthropic/response.js'
import { EACH, rawJsonValues } from '../../src/dialects/rawJsonValues.js'
import type { ToolCallBlock } from '../../src/types.js'

/**
 * A whole Anthropic answer carries each tool call's arguments as a JSON
 * object inside the body (`tool_use.input`): parsing the body rounds an
 * integer past 2^53 in it, while the same answer streamed keeps the model's
 * text (`partial_json`). With the body's text at hand, a call whose input
 * parsing rounded keeps that text as `rawArguments`, what an OpenAI-shaped
 * answer (the gateway's) sends on.
 */

const TWEET = '1859312345678901234'

function message(content: unknown[]): string {
  return JSON.stringify({
    id: 'msg_1',
    type: 'message',
    role: 'assistant',
    model: 'claude-sonnet-4-5',
    content,
    stop_reason: 'tool_use',
    usage: { input_tokens: 10, output_tokens: 5 },
  })
}

/** The body with `input` spliced in as written (JSON.stringify would round it first). */
function withInput(input: string, before: unknown[] = []): string {
  return message([
    ...before,
    { type: 'tool_use', id: 'toolu_1', name: 'tweet', input: '§' },
  ]).replace('"§"', input)
}

function calls(text: string, meta?: { text: string }): ToolCallBlock[] {
  const response = meta
    ? parseAnthropicResponse(JSON.parse(text), meta)
    : parseAnthropicResponse(text)
  return response.content.filter((b): b is ToolCallBlock => b.type === 'tool_call')
}

describe('a whole Anthropic answer whose tool input holds an integer past 2^53', () => {
  it('keeps the input as written (rawArguments), from the text or the parsed body with its text', () => {
    const body = withInput(`{"id":${TWEET},"note":"hi"}`, [{ type: 'text', text: 'Looking.' }])
    for (const [call] of [calls(body), calls(body, { text: body })]) {
      expect(call?.rawArguments).toBe(`{"id":${TWEET},"note":"hi"}`)
      expect(call?.arguments).toEqual({ id: Number(TWEET), note: 'hi' })
    }
  })

  it('finds each call by its place in content, whatever the spacing, escapes and strings around it', () => {
    const body = [
      '{ "type" : "message", "id": "msg_1", "model": "m",',
      '  "content" : [',
      '    { "type": "text", "text": "a } ] \\" { [ , input" },',
      '    { "type": "tool_use", "id": "toolu_a", "name": "f",',
      '      "input" : { "s": "}{\\"", "nested": { "ids": [ 9007199254740993, 1 ] } } },',
      '    { "type": "tool_use", "id": "toolu_b", "name": "g", "inp\\u0075t": {"n": 12} },',
      `    { "type": "tool_use", "id": "toolu_c", "name": "h", "input": {"x": 1}, "input": {"id": ${TWEET}} }`,
      '  ],',
      '  "stop_reason": "tool_use", "usage": { "input_tokens": 1, "output_tokens": 1 } }',
    ].join('\n')
    expect(rawJsonValues(body, ['content', EACH, 'input'])).toEqual([
      { indexes: [1], text: '{ "s": "}{\\"", "nested": { "ids": [ 9007199254740993, 1 ] } }' },
      { indexes: [2], text: '{"n": 12}' },
      { indexes: [3], text: `{"id": ${TWEET}}` },
    ])
    const [a, b, c] = calls(body)
    expect(a?.rawArguments).toBe('{ "s": "}{\\"", "nested": { "ids": [ 9007199254740993, 1 ] } }')
    // Nothing rounded: left as before, the arguments an object.
    expect(b?.rawArguments).toBeUndefined()
    expect(b?.arguments).toEqual({ n: 12 })
    // A repeated key is the last one, as JSON.parse reads it.
    expect(c?.rawArguments).toBe(`{"id": ${TWEET}}`)
  })

  it('sets no rawArguments where parsing changed nothing (2^53 itself, 1e20, digits in a string)', () => {
    for (const input of ['{"n":9007199254740992}', '{"n":1e20}', `{"id":"${TWEET}"}`]) {
      expect(calls(withInput(input))[0]?.rawArguments).toBeUndefined()
    }
  })

  it('without the text (a parsed body alone) reads as before: the object, no rawArguments', () => {
    const [call] = parseAnthropicResponse(JSON.parse(withInput(`{"id":${TWEET}}`))).content
    expect(call).toMatchObject({ type: 'tool_call', arguments: { id: Number(TWEET) } })
    expect((call as ToolCallBlock).rawArguments).toBeUndefined()
  })
})
