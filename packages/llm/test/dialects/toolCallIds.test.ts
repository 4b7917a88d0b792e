import { describe, expect, it } from 'vitest'
import { StreamCollector } from '../../src/call/StreamCollector.js'
import { dialects } from '../../src/dialects/dialects.js'
import type { ChatMessage, StreamEvent } from '../../src/types.js'

const chunk = (delta: unknown, finish: string | null = null) => ({
  event: undefined,
  data: JSON.stringify({ id: 'c', choices: [{ index: 0, delta, finish_reason: finish }] }),
})

/** Every event a parser makes of `frames`, and the answer they join into. */
function parse(
  parser: ReturnType<typeof dialects.openai.createStreamParser>,
  frames: Array<{ event: string | undefined; data: string }>,
) {
  const events: StreamEvent[] = []
  for (const frame of frames) events.push(...parser.parseStreamEvent(frame))
  events.push(...parser.end())
  const collector = new StreamCollector(true)
  for (const event of events) collector.add(event)
  return { events, content: collector.content() }
}

const geminiCall = (name: string, args: unknown) => ({
  candidates: [
    {
      content: { role: 'model', parts: [{ functionCall: { name, args } }] },
      finishReason: 'STOP',
    },
  ],
})

describe('Gemini: function calls without ids, over several turns', () => {
  it('each tool result is sent under the name of the nearest call before it with its id', () => {
    // A history made before ids were unique: every turn's call is `call_0`.
    const messages: ChatMessage[] = [
      { role: 'user', content: 'weather, then email' },
      {
        role: 'assistant',
        content: [
          { type: 'tool_call', id: 'call_0', name: 'get_weather', arguments: { city: 'Paris' } },
        ],
      },
      { role: 'tool', content: [{ type: 'tool_result', toolCallId: 'call_0', content: 'sunny' }] },
      {
        role: 'assistant',
        content: [
          { type: 'tool_call', id: 'call_0', name: 'send_email', arguments: { to: 'bob' } },
        ],
      },
      { role: 'tool', content: [{ type: 'tool_result', toolCallId: 'call_0', content: 'sent' }] },
    ]
    const body = dialects.gemini.buildRequest({ messages, maxTokens: 10 }, 'gemini-2.5-flash')
      .body as { contents: Array<{ parts: Array<{ functionResponse?: { name: string } }> }> }
    const responses = body.contents.flatMap((c) =>
      c.parts.flatMap((p) => (p.functionResponse ? [p.functionResponse.name] : [])),
    )
    expect(responses).toEqual(['get_weather', 'send_email'])
  })

  it('ids made for calls without one differ from one response to the next, whole or streamed', () => {
    const ids = [
      dialects.gemini.parseResponse(geminiCall('get_weather', { city: 'Paris' })),
      dialects.gemini.parseResponse(geminiCall('send_email', { to: 'bob' })),
    ].map((r) => (r.content[0]?.type === 'tool_call' ? r.content[0].id : ''))
    for (const body of [geminiCall('get_weather', {}), geminiCall('send_email', {})]) {
      const events = dialects.gemini
        .createStreamParser()
        .parseStreamEvent({ event: undefined, data: JSON.stringify(body) })
      ids.push(events[0]?.type === 'tool_call' ? events[0].id : '')
    }
    expect(ids.every((id) => /^call_[0-9a-f]{12}_0$/.test(id))).toBe(true)
    expect(new Set(ids).size).toBe(4)
  })
})

describe('OpenAI-compatible streams: which call a tool-call delta belongs to', () => {
  it('parallel calls that all say `index: 0` but carry their own ids stay separate calls (Ollama, SGLang, LiteLLM)', () => {
    const { content } = parse(dialects.openai.createStreamParser(), [
      chunk({
        role: 'assistant',
        tool_calls: [
          {
            index: 0,
            id: 'call_a',
            type: 'function',
            function: { name: 'file_write', arguments: '{"path":' },
          },
        ],
      }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '"hello.py"}' } }] }),
      chunk({
        tool_calls: [
          {
            index: 0,
            id: 'call_b',
            type: 'function',
            function: { name: 'file_write', arguments: '{"path":' },
          },
        ],
      }),
      // Fragments after it at index 0 continue the newest call.
      chunk({ tool_calls: [{ index: 0, function: { arguments: '"world.py"}' } }] }),
      chunk({}, 'tool_calls'),
      { event: undefined, data: '[DONE]' },
    ])
    expect(content).toEqual([
      {
        type: 'tool_call',
        id: 'call_a',
        name: 'file_write',
        arguments: { path: 'hello.py' },
        rawArguments: '{"path":"hello.py"}',
      },
      {
        type: 'tool_call',
        id: 'call_b',
        name: 'file_write',
        arguments: { path: 'world.py' },
        rawArguments: '{"path":"world.py"}',
      },
    ])
  })

  it('indexed calls (OpenAI’s own) are joined per index as before', () => {
    const { content } = parse(dialects.openai.createStreamParser(), [
      chunk({
        tool_calls: [
          { index: 0, id: 'call_1', type: 'function', function: { name: 'a', arguments: '' } },
          { index: 1, id: 'call_2', type: 'function', function: { name: 'b', arguments: '' } },
        ],
      }),
      chunk({ tool_calls: [{ index: 1, function: { arguments: '{"y":2}' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '{"x":1}' } }] }),
      chunk({}, 'tool_calls'),
      { event: undefined, data: '[DONE]' },
    ])
    expect(content.map((b) => (b.type === 'tool_call' ? [b.id, b.name, b.arguments] : []))).toEqual(
      [
        ['call_1', 'a', { x: 1 }],
        ['call_2', 'b', { y: 2 }],
      ],
    )
  })

  it('parallel calls at their own indexes that share one id stay two calls, each event saying its index', () => {
    const { events, content } = parse(dialects.openai.createStreamParser(), [
      chunk({
        tool_calls: [
          { index: 0, id: 'dup', type: 'function', function: { name: 'a', arguments: '' } },
        ],
      }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '{"x":1}' } }] }),
      chunk({
        tool_calls: [
          { index: 1, id: 'dup', type: 'function', function: { name: 'b', arguments: '' } },
        ],
      }),
      chunk({ tool_calls: [{ index: 1, function: { arguments: '{"y":2}' } }] }),
      chunk({}, 'tool_calls'),
      { event: undefined, data: '[DONE]' },
    ])
    expect(content.map((b) => (b.type === 'tool_call' ? [b.id, b.name, b.arguments] : []))).toEqual(
      [
        ['dup', 'a', { x: 1 }],
        ['dup', 'b', { y: 2 }],
      ],
    )
    expect(events.flatMap((e) => (e.type === 'tool_call' ? [[e.name, e.index]] : []))).toEqual([
      ['a', 0],
      ['a', 0],
      ['b', 1],
      ['b', 1],
    ])
  })

  it('a streamed call with no argument text stays one call: the `{}` it is given says its index', () => {
    const { events, content } = parse(dialects.openai.createStreamParser(), [
      chunk({
        tool_calls: [
          { index: 0, id: 'call_1', type: 'function', function: { name: 'now', arguments: '' } },
        ],
      }),
      chunk({}, 'tool_calls'),
      { event: undefined, data: '[DONE]' },
    ])
    expect(content.map((b) => (b.type === 'tool_call' ? [b.id, b.name, b.arguments] : []))).toEqual(
      [['call_1', 'now', {}]],
    )
    expect(
      events.flatMap((e) => (e.type === 'tool_call' ? [[e.argumentsDelta, e.index]] : [])),
    ).toEqual([
      ['', 0],
      ['{}', 0],
    ])
  })

  it('ids made for calls a server sent without one differ from one stream to the next', () => {
    const frames = [
      chunk({ tool_calls: [{ index: 0, function: { name: 'weather', arguments: '{}' } }] }),
      chunk({}, 'tool_calls'),
      { event: undefined, data: '[DONE]' },
    ]
    const ids = [1, 2].map(() => {
      const block = parse(dialects.openai.createStreamParser(), frames).content[0]
      return block?.type === 'tool_call' ? block.id : ''
    })
    expect(ids[0]).toMatch(/^call_[0-9a-f]{12}_0$/)
    expect(ids[1]).toMatch(/^call_[0-9a-f]{12}_0$/)
    expect(ids[0]).not.toBe(ids[1])
  })
})
