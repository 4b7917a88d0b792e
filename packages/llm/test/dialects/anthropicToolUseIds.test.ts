import { describe, expect, it } from 'vitest'
import { AnthropicToolIds, anthropicToolUseId } from '../../src/dialects/anthropic/toolUseId.js'
import { dialects } from '../../src/dialects/dialects.js'
import type { ChatMessage } from '../../src/types.js'

/** Anthropic's pattern for `tool_use.id` and `tool_result.tool_use_id`. */
const SENDABLE = /^[a-zA-Z0-9_-]+$/

/** A history whose tool calls another provider made, ids and all, as an OpenAI client sends it back. */
function history(ids: string[]): ChatMessage[] {
  return [
    { role: 'user', content: 'weather in Paris and Rome' },
    {
      role: 'assistant',
      content: ids.map((id, i) => ({
        type: 'tool_call' as const,
        id,
        name: 'weather',
        arguments: { city: i === 0 ? 'Paris' : 'Rome' },
      })),
    },
    ...ids.map((id, i) => ({
      role: 'tool' as const,
      content: [{ type: 'tool_result' as const, toolCallId: id, content: `sunny ${i}` }],
    })),
  ]
}

function sentIds(messages: ChatMessage[]) {
  const { body } = dialects.anthropic.buildRequest({ maxTokens: 10, messages }, 'claude-sonnet-4-5')
  const turns = body['messages'] as Array<{ content: Array<Record<string, unknown>> }>
  const calls = turns[1]?.content.map((b) => b['id'])
  const results = turns[2]?.content.map((b) => b['tool_use_id'])
  return { calls, results }
}

describe('tool-call ids Anthropic would refuse', () => {
  it("are rewritten to its pattern, a call and its result alike (Kimi's functions.f:0, a Responses-API call_…|fc_…)", () => {
    const ids = ['functions.weather:0', 'call_abc|fc_def']
    const { calls, results } = sentIds(history(ids))
    expect(calls).toHaveLength(2)
    for (const id of calls as string[]) expect(id).toMatch(SENDABLE)
    // Each result still names its own call.
    expect(results).toEqual(calls)
    expect(calls?.[0]).toMatch(/^functions_weather_0_/)
  })

  it('keep two ids apart that differ only in the characters replaced', () => {
    const { calls, results } = sentIds(history(['a:1', 'a.1']))
    expect(new Set(calls).size).toBe(2)
    expect(results).toEqual(calls)
  })

  it('are the same on every request, so a history replayed turn after turn stays paired', () => {
    expect(anthropicToolUseId('functions.weather:0')).toBe(
      anthropicToolUseId('functions.weather:0'),
    )
    expect(anthropicToolUseId('::')).toMatch(SENDABLE)
    expect(anthropicToolUseId('é'.repeat(200)).length).toBeLessThan(100)
  })

  it('leave a sendable id as it is (Anthropic’s own, OpenAI’s, the ones llm generates)', () => {
    const ids = ['toolu_01A09q90qw90lq917835lq9', 'call_6085f774f5ef_0']
    const { calls, results } = sentIds(history(ids))
    expect(calls).toEqual(ids)
    expect(results).toEqual(ids)
  })
})

describe('tool-call ids repeated across turns (Anthropic: "`tool_use` ids must be unique")', () => {
  /** Two turns whose calls a server numbered per answer: `call_0` each time. */
  const twoTurns: ChatMessage[] = [
    { role: 'user', content: 'weather in Paris' },
    {
      role: 'assistant',
      content: [{ type: 'tool_call', id: 'call_0', name: 'weather', arguments: { city: 'Paris' } }],
    },
    { role: 'tool', content: [{ type: 'tool_result', toolCallId: 'call_0', content: 'sunny' }] },
    { role: 'user', content: 'and in Rome and Oslo?' },
    {
      role: 'assistant',
      content: [
        { type: 'tool_call', id: 'call_0', name: 'weather', arguments: { city: 'Rome' } },
        { type: 'tool_call', id: 'call_1', name: 'weather', arguments: { city: 'Oslo' } },
      ],
    },
    { role: 'tool', content: [{ type: 'tool_result', toolCallId: 'call_1', content: 'snow' }] },
    { role: 'tool', content: [{ type: 'tool_result', toolCallId: 'call_0', content: 'rain' }] },
  ]

  it('are sent once each, every result still paired with the call it answers', () => {
    const { body } = dialects.anthropic.buildRequest(
      { maxTokens: 10, messages: twoTurns },
      'claude-sonnet-4-5',
    )
    const turns = body['messages'] as Array<{ content: Array<Record<string, unknown>> }>
    const calls = turns.flatMap((t) => t.content.filter((b) => b['type'] === 'tool_use'))
    const ids = calls.map((b) => b['id'] as string)
    expect(new Set(ids).size).toBe(3)
    for (const id of ids) expect(id).toMatch(SENDABLE)
    // The first turn keeps its id; the repeat is renamed.
    expect(ids[0]).toBe('call_0')
    const byCity = new Map(calls.map((b) => [(b['input'] as { city: string }).city, b['id']]))
    const results = turns.flatMap((t) => t.content.filter((b) => b['type'] === 'tool_result'))
    const answered = new Map(results.map((b) => [b['content'], b['tool_use_id']]))
    expect(answered.get('sunny')).toBe(byCity.get('Paris'))
    expect(answered.get('rain')).toBe(byCity.get('Rome'))
    expect(answered.get('snow')).toBe(byCity.get('Oslo'))
  })

  it('pairs two calls of one message that share an id with their results in order', () => {
    const { body } = dialects.anthropic.buildRequest(
      {
        maxTokens: 10,
        messages: [
          { role: 'user', content: 'two cities' },
          {
            role: 'assistant',
            content: [
              { type: 'tool_call', id: 'dup', name: 'weather', arguments: { city: 'Paris' } },
              { type: 'tool_call', id: 'dup', name: 'weather', arguments: { city: 'Rome' } },
            ],
          },
          { role: 'tool', content: [{ type: 'tool_result', toolCallId: 'dup', content: 'sunny' }] },
          { role: 'tool', content: [{ type: 'tool_result', toolCallId: 'dup', content: 'rain' }] },
        ],
      },
      'claude-sonnet-4-5',
    )
    const turns = body['messages'] as Array<{ content: Array<Record<string, unknown>> }>
    const ids = turns[1]?.content.map((b) => b['id'])
    expect(new Set(ids).size).toBe(2)
    expect(turns[2]?.content.map((b) => b['tool_use_id'])).toEqual(ids)
  })

  it('name a repeat past literal ids that look like its suffixes (`a_2` sent before `a` repeats)', () => {
    const ids = new AnthropicToolIds()
    const sent = ['a', 'a_2', 'a', 'a_3', 'a', 'a', 'a_2'].map((id, i) => ids.call(id, i))
    // Every one unique; a repeat takes the least suffix not yet sent.
    expect(sent).toEqual(['a', 'a_2', 'a_3', 'a_3_2', 'a_4', 'a_5', 'a_2_2'])
  })
})
