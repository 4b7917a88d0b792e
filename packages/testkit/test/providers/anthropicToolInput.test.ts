/**
 * Anthropic's streamed tool_use input, event by event, as the API sends it.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { type FakeProvider, reply, startFakeProvider } from '../../src/providers/index.js'
import { postAnthropicMessages } from '../support/fakeChat.js'
import { dataOf, readSse } from './sse.js'

let fake: FakeProvider | undefined
afterEach(async () => {
  await fake?.close()
  fake = undefined
})

interface Event {
  type: string
  index?: number
  delta?: { type: string; partial_json?: string }
  content_block?: unknown
  usage?: { output_tokens?: number }
}

describe('Anthropic streamed tool_use input', () => {
  // docs.claude.com streaming page, "Streaming request with tool use": after
  // `content_block_start` with `"input":{}` the first delta is
  // `{"type":"input_json_delta","partial_json":""}`, then the pieces
  // (`{\"location\":`, ` \"San`, …); Claude Code's stream-json shows the same
  // empty leading fragment on every tool call.
  it('opens each tool_use block with an empty partial_json, then the pieces', async () => {
    fake = await startFakeProvider({
      dialect: 'anthropic',
      reply: reply.text('Checking', {
        toolCalls: [
          { id: 'toolu_a', name: 'get_weather', arguments: { location: 'San Francisco' } },
          { id: 'toolu_b', name: 'noop', arguments: {} },
        ],
      }),
    })
    const res = await postAnthropicMessages(
      fake.url,
      { stream: true },
      { model: 'claude', maxTokens: 100 },
    )
    const events = dataOf<Event>(await readSse(res))
    for (const index of [1, 2]) {
      const deltas = events
        .filter((e) => e.type === 'content_block_delta' && e.index === index)
        .map((e) => e.delta!)
      expect(deltas[0]).toEqual({ type: 'input_json_delta', partial_json: '' })
      expect(deltas.slice(1).every((d) => d.partial_json !== '')).toBe(true)
    }
    expect(JSON.parse(inputOf(events, 1))).toEqual({ location: 'San Francisco' })
  })

  // A call without arguments streams its empty leading fragment and nothing
  // else: the input's text is `""`, never `{}` (raw chunks in
  // BerriAI/litellm#5063, fixed by #5091 "handle anthropic returning empty
  // argument string (invalid json str) for tool call while streaming";
  // langchainrb#960, activeagents/activeagent#299: JSON.parse of the joined
  // pieces throws). The fake streamed `{` and `}`, so a client that parses
  // the joined input at `content_block_stop` passed against it and threw
  // against the API.
  it('streams a tool_use without arguments as the lone empty partial_json, its input text ""', async () => {
    fake = await startFakeProvider({
      dialect: 'anthropic',
      reply: reply.text('', {
        toolCalls: [
          { id: 'toolu_n', name: 'get_time', arguments: {} },
          { id: 'toolu_w', name: 'get_weather', arguments: { city: 'Oslo' } },
        ],
      }),
    })
    const res = await post(fake, true)
    const events = dataOf<Event>(await readSse(res))
    const noArgs = events.filter((e) => e.type === 'content_block_delta' && e.index === 0)
    expect(noArgs.map((e) => e.delta)).toEqual([{ type: 'input_json_delta', partial_json: '' }])
    expect(inputOf(events, 0)).toBe('')
    expect(JSON.parse(inputOf(events, 1))).toEqual({ city: 'Oslo' })
    expect(events.find((e) => e.type === 'content_block_start' && e.index === 0)).toMatchObject({
      content_block: { type: 'tool_use', id: 'toolu_n', name: 'get_time', input: {} },
    })
    // Still generated (paced and counted, as before and as the other
    // dialects count it: `{}` and the three pieces of the other call), not sent.
    expect(events.find((e) => e.type === 'message_delta')?.usage?.output_tokens).toBe(5)
    expect(fake.requests[0]!.tokensSent).toBe(5)
    // The whole answer's `input` is the empty object, as before.
    const whole = (await (await post(fake, false)).json()) as { content: unknown[] }
    expect(whole.content[0]).toEqual({
      type: 'tool_use',
      id: 'toolu_n',
      name: 'get_time',
      input: {},
    })
  })

  // Without `eager_input_streaming` the API buffers a tool's input and
  // sends each parameter once it is whole and valid: "Current models only
  // support emitting one complete key and value property from input at a
  // time" (docs.claude.com streaming, tool use); fine-grained streaming
  // sends "tool use parameter values without buffering or JSON validation
  // … without having to wait for the entire parameter to buffer and
  // validate" (platform.claude.com, fine-grained tool streaming: set
  // `eager_input_streaming: true` on the tool; before GA the beta header
  // `fine-grained-tool-streaming-2025-05-14`). The fake streamed every
  // input in thirds cut anywhere (`{"city":"Pa`), so a client's handling of
  // a long silence while a big parameter is generated never met it.
  it('buffers each parameter whole unless the tool sets eager_input_streaming, then streams the pieces', async () => {
    const toolCalls = [
      { id: 'toolu_w', name: 'get_weather', arguments: { city: 'Paris', unit: 'celsius' } },
    ]
    fake = await startFakeProvider({ dialect: 'anthropic', reply: reply.text('', { toolCalls }) })
    const pieces = async (tool: Record<string, unknown>, headers?: Record<string, string>) => {
      const res = await postAnthropicMessages(
        fake!.url,
        {
          stream: true,
          tools: [{ name: 'get_weather', input_schema: { type: 'object' }, ...tool }],
        },
        { model: 'claude-sonnet-4-5', maxTokens: 100, ...(headers ? { headers } : {}) },
      )
      return dataOf<Event>(await readSse(res))
        .filter((e) => e.type === 'content_block_delta')
        .map((e) => e.delta!.partial_json)
    }
    expect(await pieces({})).toEqual(['', '{"city":"Paris"', ',"unit":"celsius"}'])
    // Generated all the same: three pieces paced and counted.
    expect(fake.requests[0]!.tokensSent).toBe(3)
    expect(await pieces({ eager_input_streaming: true })).toEqual([
      '',
      '{"city":"Pa',
      'ris","unit"',
      ':"celsius"}',
    ])
    expect(
      await pieces({}, { 'anthropic-beta': 'fine-grained-tool-streaming-2025-05-14' }),
    ).toHaveLength(4)
  })

  it('buffered, a parameter the token cap cuts is not sent: the input finished before it, as unstreamed', async () => {
    fake = await startFakeProvider({
      dialect: 'anthropic',
      honourOutputLimits: true,
      reply: reply.text('', { toolCalls: [{ name: 'get', arguments: { a: 1, b: 'long' } }] }),
    })
    // '{"a":1', ',"b":"' written before the cap: `a` finished, `b` begun.
    const res = await postAnthropicMessages(
      fake.url,
      { stream: true },
      { model: 'claude', maxTokens: 2 },
    )
    const events = dataOf<Event>(await readSse(res))
    expect(inputOf(events, 0)).toBe('{"a":1')
  })
})

/** A message asking for `get_time`, streamed or whole. */
function post(fake: FakeProvider, stream: boolean) {
  return postAnthropicMessages(
    fake.url,
    { stream, tools: [{ name: 'get_time', input_schema: { type: 'object' } }] },
    { model: 'claude', maxTokens: 100 },
  )
}

/** The text of block `index`'s input: its `partial_json` pieces, joined. */
function inputOf(events: Event[], index: number): string {
  return events
    .filter((e) => e.type === 'content_block_delta' && e.index === index)
    .map((e) => e.delta!.partial_json)
    .join('')
}
