import { randomUUID } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { afterEach, describe, expect, it } from 'vitest'
import {
  type OpenAICompatibleOptions,
  openAICompatible,
} from '../../src/adapters/openAICompatible.js'
import { runTurns } from '../../src/agent/runTurns.js'
import { callModel } from '../../src/call/callModel.js'
import type { ChatMessage } from '../../src/types.js'
import { rawServer } from './support/rawServer.js'

/**
 * DeepSeek's thinking mode (on by default for deepseek-v4-*, and
 * deepseek-reasoner) answers 400 for an assistant turn that made tool calls
 * and comes back without its `reasoning_content` — "Missing
 * `reasoning_content` field in the assistant message at message index N"
 * (api-docs.deepseek.com/guides/thinking_mode#tool-calls; the body as quoted
 * in HKUDS/nanobot#946, continuedev/continue#10193). With `replayThinking`
 * off by default, every `runTurns` tool loop against DeepSeek failed on its
 * second turn. A thinking-mode tool call can come with `reasoning_content:
 * ""`: the field must still be there. Turns without tool calls do not need
 * it (DeepSeek ignores it), and go without it.
 */

const servers: Array<{ close(): void }> = []
afterEach(() => {
  for (const server of servers.splice(0)) server.close()
})

type Body = { stream?: boolean; messages: Array<Record<string, unknown>> }

const THOUGHT = 'need the weather in Oslo first'
const tools = [{ name: 'weather', parameters: { type: 'object' } }]
const CALL = {
  id: 'call_1',
  type: 'function',
  function: { name: 'weather', arguments: '{"city":"Oslo"}' },
}

const whole = (message: object, finish: string) =>
  JSON.stringify({
    id: 'c1',
    object: 'chat.completion',
    model: 'deepseek-v4-flash',
    choices: [{ index: 0, message, logprobs: null, finish_reason: finish }],
    usage: { prompt_tokens: 9, completion_tokens: 7, total_tokens: 16 },
  })

const chunk = (delta: object, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', model: 'deepseek-v4-flash', choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] })}\n\n`

/** DeepSeek's thinking-mode stream: both fields named in every delta, the thinking (maybe none), then the call. */
const streamed = (thought: string) =>
  [
    chunk({ role: 'assistant', content: null, reasoning_content: '' }),
    ...(thought === '' ? [] : [chunk({ content: null, reasoning_content: thought })]),
    chunk({ tool_calls: [{ index: 0, ...CALL, function: { ...CALL.function, arguments: '' } }] }),
    chunk({ tool_calls: [{ index: 0, function: { arguments: CALL.function.arguments } }] }),
    chunk({ content: '', reasoning_content: null }, 'tool_calls'),
    'data: [DONE]\n\n',
  ].join('')

/**
 * DeepSeek's 400 for the first assistant message without
 * `reasoning_content` in a user turn (the messages between two user
 * messages) where the model called tools, or none.
 */
function missingReasoning(body: Body): string | undefined {
  let turn: number[] = []
  let called = false
  let at = -1
  const check = () => {
    const first = turn.find((i) => typeof body.messages[i]?.['reasoning_content'] !== 'string')
    if (called && first !== undefined && at < 0) at = first
  }
  body.messages.forEach((m, i) => {
    if (m['role'] === 'user') {
      check()
      turn = []
      called = false
    } else if (m['role'] === 'assistant') {
      turn.push(i)
      if (Array.isArray(m['tool_calls'])) called = true
    }
  })
  check()
  if (at < 0) return undefined
  return JSON.stringify({
    error: {
      message: `Missing \`reasoning_content\` field in the assistant message at message index ${at}. For more information, please refer to https://api-docs.deepseek.com/guides/thinking_mode#tool-calls`,
      type: 'invalid_request_error',
      param: null,
      code: 'invalid_request_error',
    },
  })
}

const ANSWER = whole({ role: 'assistant', content: '4 °C', reasoning_content: 'done' }, 'stop')

/**
 * A DeepSeek thinking-mode server: thinks `thought` and calls `weather` on
 * a request with no tool result yet, answers after; every body it got.
 */
async function deepseekThinking(thought = THOUGHT) {
  const bodies: Body[] = []
  const server = await rawServer((req: IncomingMessage, res: ServerResponse) => {
    let text = ''
    req.setEncoding('utf8')
    req.on('data', (piece: string) => {
      text += piece
    })
    req.on('end', () => {
      const body = JSON.parse(text) as Body
      bodies.push(body)
      const refused = missingReasoning(body)
      if (refused !== undefined) {
        res.writeHead(400, { 'content-type': 'application/json' })
        res.end(refused)
        return
      }
      if (body.messages.some((m) => m['role'] === 'tool')) {
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end(ANSWER)
        return
      }
      if (body.stream === true) {
        res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8' })
        res.end(streamed(thought))
        return
      }
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(
        whole(
          { role: 'assistant', content: '', reasoning_content: thought, tool_calls: [CALL] },
          'tool_calls',
        ),
      )
    })
  })
  servers.push(server)
  return { baseURL: server.baseURL, bodies }
}

const deepseek = (baseURL: string, options: Partial<OpenAICompatibleOptions> = {}) =>
  openAICompatible({
    baseURL,
    apiKey: 'sk',
    model: 'deepseek-v4-flash',
    dialect: 'deepseek',
    ...options,
  })

/** The weather loop through a DeepSeek adapter made with `options` (streamed when `stream`). */
async function weatherLoop(
  baseURL: string,
  stream: boolean,
  options: Partial<OpenAICompatibleOptions> = {},
) {
  const model = deepseek(baseURL, options)
  try {
    return await runTurns({
      operationId: `weather-${randomUUID()}`,
      deadline: false,
      messages: [{ role: 'user', content: 'weather in Oslo?' }],
      tools: { weather: () => '4 °C' },
      call: (history, { idempotencyKey, signal }) => {
        const request = { messages: history, maxTokens: 64, tools }
        const options = {
          models: [model],
          request,
          idempotencyKey,
          signal,
          limits: { admission: false as const },
          retry: { maxAttempts: 1 },
        }
        return stream
          ? callModel({ ...options, request: { ...request, stream: true } }).result
          : callModel(options)
      },
    })
  } finally {
    await model.close()
  }
}

const assistantIn = (body: Body | undefined) =>
  body?.messages.find((m) => m['role'] === 'assistant')

describe('a tool loop against DeepSeek thinking mode', () => {
  it.each([false, true])(
    'answers with default options (streamed: %s), the tool-call turn sent back with its reasoning_content',
    async (stream) => {
      const server = await deepseekThinking()
      const run = await weatherLoop(server.baseURL, stream)
      expect(run.response.text).toBe('4 °C')
      expect(server.bodies).toHaveLength(2)
      expect(assistantIn(server.bodies[1])).toMatchObject({
        role: 'assistant',
        reasoning_content: THOUGHT,
        tool_calls: [CALL],
      })
    },
  )

  it.each([
    ['default options', {}],
    ['replayThinking: true', { replayThinking: true }],
    ["replayThinking: 'reasoning_content'", { replayThinking: 'reasoning_content' }],
  ] as const)(
    'a tool call that came with an empty reasoning_content goes back with `""` (%s)',
    async (_, options) => {
      for (const stream of [false, true]) {
        const server = await deepseekThinking('')
        const run = await weatherLoop(server.baseURL, stream, options)
        expect(run.response.text).toBe('4 °C')
        expect(server.bodies).toHaveLength(2)
        expect(assistantIn(server.bodies[1])).toMatchObject({ reasoning_content: '' })
      }
    },
  )

  it('replayThinking: false sends no thinking back, as asked (DeepSeek then refuses the tool-call turn)', async () => {
    const server = await deepseekThinking()
    await expect(weatherLoop(server.baseURL, false, { replayThinking: false })).rejects.toThrow(
      /Missing `reasoning_content` field in the assistant message at message index 1/,
    )
    expect(assistantIn(server.bodies[1])).not.toHaveProperty('reasoning_content')
  })
})

describe('by default, only the turns of a tool loop carry their thinking back', () => {
  it("a user turn's tool calls and the answer after them carry reasoning_content; a plain turn does not", async () => {
    const server = await deepseekThinking()
    const model = deepseek(server.baseURL)
    const messages: ChatMessage[] = [
      { role: 'user', content: 'hi' },
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 'a greeting' },
          { type: 'text', text: 'Hello!' },
        ],
      },
      { role: 'user', content: 'weather in Oslo?' },
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: THOUGHT },
          { type: 'tool_call', id: 'call_1', name: 'weather', arguments: { city: 'Oslo' } },
        ],
      },
      { role: 'tool', content: [{ type: 'tool_result', toolCallId: 'call_1', content: '4 °C' }] },
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 'the tool said 4 °C' },
          { type: 'text', text: '4 °C' },
        ],
      },
      // The answer after the tool results had no thinking text of its own.
      { role: 'user', content: 'and in Bergen?' },
      {
        role: 'assistant',
        content: [
          { type: 'tool_call', id: 'call_2', name: 'weather', arguments: { city: 'Bergen' } },
        ],
      },
      { role: 'tool', content: [{ type: 'tool_result', toolCallId: 'call_2', content: '6 °C' }] },
      { role: 'assistant', content: '6 °C' },
      { role: 'user', content: 'thanks' },
    ]
    try {
      const answer = await callModel({
        models: [model],
        request: { messages, maxTokens: 64, tools },
        limits: { admission: false },
      })
      expect(answer.text).toBe('4 °C')
    } finally {
      await model.close()
    }
    const sent = server.bodies[0]?.messages.filter((m) => m['role'] === 'assistant')
    expect(sent?.[0]).toEqual({ role: 'assistant', content: 'Hello!' })
    expect(sent?.[1]).toMatchObject({ reasoning_content: THOUGHT })
    expect(sent?.[2]).toMatchObject({ content: '4 °C', reasoning_content: 'the tool said 4 °C' })
    expect(sent?.[3]).toMatchObject({ reasoning_content: '' })
    expect(sent?.[4]).toEqual({ role: 'assistant', content: '6 °C', reasoning_content: '' })
  })
})

describe('thinking DeepSeek cannot parse is refused only where it is sent', () => {
  const cut = 'the weather \ud83d'
  const history = (toolTurn: boolean): ChatMessage[] => [
    { role: 'user', content: 'weather in Oslo?' },
    {
      role: 'assistant',
      content: toolTurn
        ? [
            { type: 'thinking', thinking: cut },
            { type: 'tool_call', id: 'call_1', name: 'weather', arguments: { city: 'Oslo' } },
          ]
        : [
            { type: 'thinking', thinking: cut },
            { type: 'text', text: 'Let me see.' },
          ],
    },
    ...(toolTurn
      ? [
          {
            role: 'tool' as const,
            content: [{ type: 'tool_result' as const, toolCallId: 'call_1', content: '4 °C' }],
          },
        ]
      : [{ role: 'user' as const, content: 'and?' }]),
  ]

  it('a lone surrogate in a tool-loop turn is refused naming the message; in a plain turn, not sent, it is not', async () => {
    const server = await deepseekThinking()
    const model = deepseek(server.baseURL)
    const call = (toolTurn: boolean) =>
      callModel({
        models: [model],
        request: { messages: history(toolTurn), maxTokens: 64, tools },
        limits: { admission: false },
      })
    try {
      await expect(call(true)).rejects.toMatchObject({ field: 'messages[1].content' })
      expect(server.bodies).toHaveLength(0)
      await call(false)
      expect(assistantIn(server.bodies[0])).not.toHaveProperty('reasoning_content')
    } finally {
      await model.close()
    }
  })
})
