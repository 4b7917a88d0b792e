import type { ProviderDialect } from '@hourglass/testkit'
import { reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { callModel } from '../../src/call/callModel.js'
import { stringifyArguments } from '../../src/dialects/blocks.js'
import { dialects } from '../../src/dialects/dialects.js'
import { isMarkedUnfinished } from '../../src/dialects/unfinishedCall.js'
import type { StreamEvent, ToolCallBlock } from '../../src/types.js'
import { useFakes, user } from './support/fakes.js'

const fakes = useFakes()
const tools = [
  { name: 'now', description: 'the time', parameters: { type: 'object', properties: {} } },
]
const request = { messages: [user('what time is it?')], maxTokens: 64, tools }

/** Each streamed call's argument text, joined per id, in the order the calls came. */
function joined(events: readonly StreamEvent[]): Record<string, string> {
  const args: Record<string, string> = {}
  for (const e of events)
    if (e.type === 'tool_call') args[e.id] = (args[e.id] ?? '') + e.argumentsDelta
  return args
}

/** Feeds SSE messages (`event`, JSON data) to a dialect's stream parser, then ends it. */
function parse(dialect: 'anthropic' | 'openai', frames: Array<[string, unknown]>): StreamEvent[] {
  const parser = dialects[dialect].createStreamParser()
  const events: StreamEvent[] = []
  for (const [event, data] of frames) {
    events.push(...parser.parseStreamEvent({ event, data: JSON.stringify(data) }))
  }
  events.push(...parser.end())
  return events
}

/** Anthropic's wire for one answer of tool calls; `deltas` are each call's `partial_json` pieces. */
function anthropicFrames(calls: Array<{ id: string; deltas: string[] }>): Array<[string, unknown]> {
  const frames: Array<[string, unknown]> = [
    [
      'message_start',
      { type: 'message_start', message: { id: 'msg_1', usage: { input_tokens: 5 } } },
    ],
  ]
  calls.forEach((call, index) => {
    frames.push([
      'content_block_start',
      {
        type: 'content_block_start',
        index,
        content_block: { type: 'tool_use', id: call.id, name: 'now', input: {} },
      },
    ])
    for (const partial of call.deltas) {
      frames.push([
        'content_block_delta',
        {
          type: 'content_block_delta',
          index,
          delta: { type: 'input_json_delta', partial_json: partial },
        },
      ])
    }
    frames.push(['content_block_stop', { type: 'content_block_stop', index }])
  })
  frames.push(
    [
      'message_delta',
      { type: 'message_delta', delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 3 } },
    ],
    ['message_stop', { type: 'message_stop' }],
  )
  return frames
}

/**
 * A tool without parameters: Anthropic streams `partial_json: ""` (or no
 * delta) for it, some OpenAI-compatible servers send no `arguments`. The
 * streamed argument text then added up to "", which client code parses as
 * JSON (the OpenAI SDK pattern) and throws on, while the whole answer said
 * `{}`. Now each such call's streamed arguments are `{}`, as its whole answer's.
 */
describe('a tool call without arguments streams `{}`, as its whole answer has it', () => {
  it('anthropic: partial_json "" (or no delta at all) ends as `{}` at content_block_stop; calls with arguments are untouched', () => {
    const events = parse(
      'anthropic',
      anthropicFrames([
        { id: 'toolu_empty', deltas: [''] },
        { id: 'toolu_none', deltas: [] },
        { id: 'toolu_args', deltas: ['{"tz":', '"UTC"}'] },
      ]),
    )
    expect(joined(events)).toEqual({
      toolu_empty: '{}',
      toolu_none: '{}',
      toolu_args: '{"tz":"UTC"}',
    })
    // Before the finish, right at its block's end: the next block's events come after it.
    const types = events.map((e) =>
      e.type === 'tool_call' ? `${e.id}:${e.argumentsDelta}` : e.type,
    )
    expect(types).toEqual([
      'toolu_empty:',
      'toolu_empty:',
      'toolu_empty:{}',
      'toolu_none:',
      'toolu_none:{}',
      'toolu_args:',
      'toolu_args:{"tz":',
      'toolu_args:"UTC"}',
      'finish',
    ])
  })

  it('anthropic: the `{}` added is marked as the parser’s (`markedUnfinished`), as OpenAI’s is; argument text is not', () => {
    // The gateway holds a marked `{}` and sends none for the call a
    // `length` answer ends in: unmarked, Anthropic's went out as "{}".
    const events = parse(
      'anthropic',
      anthropicFrames([
        { id: 'toolu_empty', deltas: [''] },
        { id: 'toolu_args', deltas: ['{"tz":"UTC"}'] },
      ]),
    )
    const marked = events.flatMap((e) =>
      e.type === 'tool_call' && e.argumentsDelta !== '' ? [[e.id, isMarkedUnfinished(e)]] : [],
    )
    expect(marked).toEqual([
      ['toolu_empty', true],
      ['toolu_args', false],
    ])
  })

  it('anthropic: a tool block the stream never stopped still gets `{}` before the finish', () => {
    const frames = anthropicFrames([{ id: 'toolu_open', deltas: [''] }]).filter(
      ([event]) => event !== 'content_block_stop',
    )
    const events = parse('anthropic', frames)
    expect(joined(events)).toEqual({ toolu_open: '{}' })
    expect(events.at(-1)?.type).toBe('finish')
  })

  it('openai-compatible: a call whose chunks carry no arguments gets `{}` before the finish; one with arguments is untouched', () => {
    const chunk = (delta: unknown, finish: string | null = null) => ({
      id: 'c1',
      choices: [{ index: 0, delta, finish_reason: finish }],
    })
    const events = parse('openai', [
      ['', chunk({ tool_calls: [{ index: 0, id: 'call_a', function: { name: 'now' } }] })],
      [
        '',
        chunk({
          tool_calls: [{ index: 1, id: 'call_b', function: { name: 'now', arguments: '' } }],
        }),
      ],
      ['', chunk({ tool_calls: [{ index: 1, function: { arguments: '{"tz":"UTC"}' } }] })],
      ['', chunk({}, 'tool_calls')],
      ['', { id: 'c1', choices: [], usage: { prompt_tokens: 5, completion_tokens: 3 } }],
    ])
    expect(joined(events)).toEqual({ call_a: '{}', call_b: '{"tz":"UTC"}' })
    expect(events.at(-1)?.type).toBe('finish')
    expect(events.filter((e) => e.type === 'finish')).toHaveLength(1)
  })

  it('openai-compatible, whole answer: a blank `arguments` is `{}` as text too (`rawArguments`), as the stream gives it', () => {
    for (const args of ['', undefined]) {
      const response = dialects.openai.parseResponse({
        id: 'c1',
        choices: [
          {
            index: 0,
            message: {
              role: 'assistant',
              content: null,
              tool_calls: [
                { id: 'call_a', type: 'function', function: { name: 'now', arguments: args } },
              ],
            },
            finish_reason: 'tool_calls',
          },
        ],
      })
      expect(response.content).toEqual([
        { type: 'tool_call', id: 'call_a', name: 'now', arguments: {}, rawArguments: '{}' },
      ])
    }
  })

  it.each([
    [
      'anthropic',
      reply.text('', { toolCalls: [{ name: 'now', arguments: {}, argumentsJson: '' }] }),
    ],
    ['openai', reply.text('', { toolCalls: [{ name: 'now', arguments: {}, argumentsJson: '' }] })],
    ['gemini', reply.text('', { toolCalls: [{ name: 'now', arguments: {} }] })],
  ] as const)(
    '%s through callModel: the streamed arguments read `{}`, the same text as the whole answer',
    async (dialect: ProviderDialect, answer) => {
      const fake = await fakes.start({ dialect, reply: answer })
      const model = fakes.adapterFor(
        dialect,
        fake.baseURL,
        dialect === 'gemini' ? 'gemini-2.5-flash' : 'm',
      )
      const stream = callModel({ models: [model], request: { ...request, stream: true } })
      const events: StreamEvent[] = []
      for await (const event of stream) events.push(event)
      const streamedArgs = Object.values(joined(events))
      expect(streamedArgs).toEqual(['{}'])
      expect(JSON.parse(streamedArgs[0] as string)).toEqual({})
      const streamedCall = (await stream.result).content.find(
        (b) => b.type === 'tool_call',
      ) as ToolCallBlock
      expect(streamedCall.arguments).toEqual({})

      if (dialect === 'anthropic') return // the fake cannot answer `input` from "" unstreamed
      const whole = await callModel({ models: [model], request })
      const call = whole.content.find((b) => b.type === 'tool_call') as ToolCallBlock
      // What the gateway writes as the call's `arguments`.
      expect(call.rawArguments ?? stringifyArguments(call.arguments)).toBe('{}')
    },
  )
})
