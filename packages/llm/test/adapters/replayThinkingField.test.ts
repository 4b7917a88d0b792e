import { randomUUID } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { afterEach, describe, expect, it } from 'vitest'
import type { ModelAdapter } from '../../src/adapters/ModelAdapter.js'
import {
  type OpenAICompatibleOptions,
  openAICompatible,
} from '../../src/adapters/openAICompatible.js'
import { runTurns } from '../../src/agent/runTurns.js'
import { callModel } from '../../src/call/callModel.js'
import { rawServer } from './support/rawServer.js'

/**
 * `replayThinking` sends earlier thinking back under the name the server
 * said it under. vLLM says it as `reasoning` (vllm-project/vllm#27752) and
 * reads only `reasoning` on an assistant message: `reasoning_content` there
 * is dropped without a word (vllm-project/vllm#38488). Sent back as
 * `reasoning_content` only, a vLLM tool loop with `replayThinking: true`
 * replayed nothing, and the model lost its reasoning at every tool call.
 * DeepSeek's `reasoning_content` goes back as `reasoning_content`; never both.
 */

const servers: Array<{ close(): void }> = []
afterEach(() => {
  for (const server of servers.splice(0)) server.close()
})

const tools = [{ name: 'weather', parameters: { type: 'object' } }]
const THOUGHT = 'need the weather in Oslo first'

type Field = 'reasoning' | 'reasoning_content'

/** The first turn's assistant message: its thinking under `field`, then a tool call. */
const thinkingCall = (field: Field) => ({
  role: 'assistant',
  content: null,
  [field]: THOUGHT,
  tool_calls: [
    {
      id: 'call_1',
      type: 'function',
      function: { name: 'weather', arguments: '{"city":"Oslo"}' },
    },
  ],
})

const whole = (id: string, message: object, finish: string) =>
  JSON.stringify({
    id,
    object: 'chat.completion',
    model: 'qwen3',
    choices: [{ index: 0, message, finish_reason: finish }],
    usage: { prompt_tokens: 9, completion_tokens: 7 },
  })

const chunk = (delta: object, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', model: 'qwen3', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`

/** The thinking in two deltas under `field`, then the tool call. */
const streamed = (field: Field) =>
  [
    chunk({ role: 'assistant', content: '' }),
    chunk({ [field]: 'need the weather ' }),
    chunk({ [field]: 'in Oslo first' }),
    chunk({
      tool_calls: [
        { index: 0, id: 'call_1', type: 'function', function: { name: 'weather', arguments: '' } },
      ],
    }),
    chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":"Oslo"}' } }] }),
    chunk({}, 'tool_calls'),
    'data: [DONE]\n\n',
  ].join('')

/**
 * An OpenAI-compatible server that thinks under `field` and calls `weather`
 * on the first turn (as a stream when asked for one, or as a whole answer
 * when `wholeAlways`), and answers on the second; every body it got.
 */
async function thinkingServer(field: Field, wholeAlways = false) {
  const bodies: Array<{ messages: Array<Record<string, unknown>> }> = []
  const server = await rawServer((req: IncomingMessage, res: ServerResponse) => {
    let text = ''
    req.setEncoding('utf8')
    req.on('data', (piece: string) => {
      text += piece
    })
    req.on('end', () => {
      const body = JSON.parse(text) as { stream?: boolean; messages: [] }
      bodies.push(body)
      if (bodies.length > 1) {
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end(whole('c2', { role: 'assistant', content: '4 °C' }, 'stop'))
      } else if (body.stream === true && !wholeAlways) {
        res.writeHead(200, { 'content-type': 'text/event-stream' })
        res.end(streamed(field))
      } else {
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end(whole('c1', thinkingCall(field), 'tool_calls'))
      }
    })
  })
  servers.push(server)
  return { baseURL: server.baseURL, bodies }
}

/**
 * A two-turn `runTurns` loop through `replayThinking` (`true` unless
 * `replay` says otherwise); the assistant message sent on the second turn.
 */
async function replayed(
  server: { baseURL: string; bodies: Array<{ messages: Array<Record<string, unknown>> }> },
  stream: boolean,
  replay: OpenAICompatibleOptions['replayThinking'] = true,
) {
  const adapter = openAICompatible({
    baseURL: server.baseURL,
    apiKey: 'sk',
    model: 'qwen3',
    replayThinking: replay,
  })
  try {
    const run = await runTurns({
      // One operation per loop: runTurns remembers each turn's answer under it.
      operationId: `weather-${randomUUID()}`,
      deadline: false,
      messages: [{ role: 'user', content: 'weather in Oslo?' }],
      tools: { weather: () => '4 °C' },
      call: (history, { idempotencyKey, signal }) => {
        const options = {
          models: [adapter],
          request: { messages: history, maxTokens: 64, tools },
          idempotencyKey,
          signal,
          limits: { admission: false as const },
        }
        return stream
          ? callModel({ ...options, request: { ...options.request, stream: true } }).result
          : callModel(options)
      },
    })
    expect(run.response.text).toBe('4 °C')
  } finally {
    await adapter.close()
  }
  expect(server.bodies).toHaveLength(2)
  return server.bodies[1]?.messages.find((message) => message['role'] === 'assistant')
}

describe('replayThinking sends thinking back under the name the server said it under', () => {
  it("vLLM's `reasoning`, whole: back as `reasoning`, not `reasoning_content`", async () => {
    const assistant = await replayed(await thinkingServer('reasoning'), false)
    expect(assistant).toMatchObject({ role: 'assistant', reasoning: THOUGHT })
    expect(assistant).not.toHaveProperty('reasoning_content')
  })

  it("vLLM's `reasoning`, streamed: back as `reasoning`, the deltas joined", async () => {
    const assistant = await replayed(await thinkingServer('reasoning'), true)
    expect(assistant).toMatchObject({ role: 'assistant', reasoning: THOUGHT })
    expect(assistant).not.toHaveProperty('reasoning_content')
  })

  it('a stream request answered whole (JSON): back as `reasoning`', async () => {
    const assistant = await replayed(await thinkingServer('reasoning', true), true)
    expect(assistant).toMatchObject({ role: 'assistant', reasoning: THOUGHT })
    expect(assistant).not.toHaveProperty('reasoning_content')
  })

  it("DeepSeek's `reasoning_content`, whole and streamed: back as `reasoning_content` only", async () => {
    for (const stream of [false, true]) {
      const assistant = await replayed(await thinkingServer('reasoning_content'), stream)
      expect(assistant).toMatchObject({ role: 'assistant', reasoning_content: THOUGHT })
      expect(assistant).not.toHaveProperty('reasoning')
    }
  })

  it('the answer keeps where its thinking came from, as plain data a history can be saved as', async () => {
    const server = await thinkingServer('reasoning')
    const adapter = openAICompatible({ baseURL: server.baseURL, apiKey: 'sk', model: 'qwen3' })
    try {
      const answer = await callModel({
        models: [adapter],
        request: {
          messages: [{ role: 'user', content: 'weather in Oslo?' }],
          maxTokens: 64,
          tools,
        },
        limits: { admission: false },
      })
      expect(answer.content[0]).toEqual({ type: 'thinking', thinking: THOUGHT, field: 'reasoning' })
      expect(JSON.parse(JSON.stringify(answer.content[0]))).toEqual(answer.content[0])
    } finally {
      await adapter.close()
    }
  })
})

type Body = { stream?: boolean; messages: Array<Record<string, unknown>> }

/** A server answering each body with `answer`'s status and JSON text; every body it got. */
async function scripted(answer: (body: Body) => [number, string]) {
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
      const [status, reply] = answer(body)
      res.writeHead(status, { 'content-type': 'application/json' })
      res.end(reply)
    })
  })
  servers.push(server)
  return { baseURL: server.baseURL, bodies }
}

const SERVER_ERROR = JSON.stringify({ error: { message: 'Internal error', type: 'server_error' } })
const ANSWER = whole('c2', { role: 'assistant', content: '4 °C' }, 'stop')
const hasToolResult = (body: Body) => body.messages.some((m) => m['role'] === 'tool')
const assistantIn = (body: Body | undefined) =>
  body?.messages.find((m) => m['role'] === 'assistant')

/** The weather loop over `models` in order, each asked once per turn; closed after. */
async function loop(models: ModelAdapter[]) {
  try {
    return await runTurns({
      // One operation per loop: runTurns remembers each turn's answer under it.
      operationId: `weather-${randomUUID()}`,
      deadline: false,
      messages: [{ role: 'user', content: 'weather in Oslo?' }],
      tools: { weather: () => '4 °C' },
      call: (history, { idempotencyKey, signal }) =>
        callModel({
          models,
          request: { messages: history, maxTokens: 64, tools },
          idempotencyKey,
          signal,
          limits: { admission: false },
          retry: { maxAttempts: 1 },
        }),
    })
  } finally {
    for (const model of models) await model.close()
  }
}

describe('the adapter that sends the history picks the name, not the server that thought', () => {
  it("a DeepSeek primary after a vLLM fallback's turn gets `reasoning_content`, which its thinking mode demands", async () => {
    // DeepSeek down on turn 1; on turn 2 it checks, as its thinking-with-tools mode does.
    const deepseek = await scripted((body) => {
      if (!hasToolResult(body)) return [500, SERVER_ERROR]
      const unreplayed = body.messages.some(
        (m) => m['role'] === 'assistant' && typeof m['reasoning_content'] !== 'string',
      )
      return unreplayed
        ? [
            400,
            JSON.stringify({
              error: {
                message:
                  'The reasoning_content in the thinking mode must be passed back to the API.',
                type: 'invalid_request_error',
                param: null,
                code: 'invalid_request_error',
              },
            }),
          ]
        : [200, ANSWER]
    })
    const vllm = await scripted(() => [200, whole('c1', thinkingCall('reasoning'), 'tool_calls')])
    const run = await loop([
      openAICompatible({
        baseURL: deepseek.baseURL,
        apiKey: 'sk',
        model: 'deepseek-reasoner',
        dialect: 'deepseek',
        replayThinking: true,
      }),
      openAICompatible({
        baseURL: vllm.baseURL,
        apiKey: 'sk',
        model: 'qwen3',
        replayThinking: true,
      }),
    ])
    expect(run.response.text).toBe('4 °C')
    expect(vllm.bodies).toHaveLength(1)
    expect(deepseek.bodies).toHaveLength(2)
    const assistant = assistantIn(deepseek.bodies[1])
    expect(assistant).toMatchObject({ role: 'assistant', reasoning_content: THOUGHT })
    expect(assistant).not.toHaveProperty('reasoning')
  })

  it("a vLLM fallback after a vLLM primary's turn gets `reasoning`, the only name vLLM reads", async () => {
    // Model A thinks and calls the tool on turn 1, and is down on turn 2.
    const a = await scripted((body) =>
      hasToolResult(body)
        ? [500, SERVER_ERROR]
        : [200, whole('c1', thinkingCall('reasoning'), 'tool_calls')],
    )
    const b = await scripted(() => [200, ANSWER])
    const run = await loop([
      openAICompatible({
        baseURL: a.baseURL,
        apiKey: 'sk',
        model: 'qwen3-32b',
        replayThinking: true,
      }),
      openAICompatible({
        baseURL: b.baseURL,
        apiKey: 'sk',
        model: 'qwen3-8b',
        replayThinking: true,
      }),
    ])
    expect(run.response.text).toBe('4 °C')
    expect(a.bodies).toHaveLength(2)
    expect(b.bodies).toHaveLength(1)
    const assistant = assistantIn(b.bodies[0])
    expect(assistant).toMatchObject({ role: 'assistant', reasoning: THOUGHT })
    expect(assistant).not.toHaveProperty('reasoning_content')
  })
})

describe("replayThinking: 'reasoning' | 'reasoning_content' names the field whatever the thinking came under", () => {
  it("'reasoning': thinking said as `reasoning_content` goes back as `reasoning`", async () => {
    for (const stream of [false, true]) {
      const assistant = await replayed(
        await thinkingServer('reasoning_content'),
        stream,
        'reasoning',
      )
      expect(assistant).toMatchObject({ role: 'assistant', reasoning: THOUGHT })
      expect(assistant).not.toHaveProperty('reasoning_content')
    }
  })

  it("'reasoning_content': thinking said as `reasoning` goes back as `reasoning_content`", async () => {
    for (const stream of [false, true]) {
      const assistant = await replayed(
        await thinkingServer('reasoning'),
        stream,
        'reasoning_content',
      )
      expect(assistant).toMatchObject({ role: 'assistant', reasoning_content: THOUGHT })
      expect(assistant).not.toHaveProperty('reasoning')
    }
  })

  it('a value that is none of these is refused naming the option (truthy, it replayed)', () => {
    const make = (replayThinking: unknown, dialect?: OpenAICompatibleOptions['dialect']) => {
      try {
        openAICompatible({
          baseURL: 'https://api.openai.com/v1',
          apiKey: 'sk',
          model: 'qwen3',
          dialect,
          replayThinking,
        } as unknown as OpenAICompatibleOptions)
        return undefined
      } catch (error) {
        return error as Error
      }
    }
    for (const value of ['reasoning-content', 'yes', 'true', 1, null, {}]) {
      expect(make(value)).toBeInstanceOf(TypeError)
      expect(make(value)?.message).toMatch(
        /^openAICompatible: replayThinking must be true, false, 'reasoning' or 'reasoning_content', got /,
      )
    }
    // DeepSeek, Qwen, ERNIE and Doubao read `reasoning_content` only.
    for (const dialect of ['deepseek', 'qwen', 'ernie', 'doubao'] as const) {
      expect(make('reasoning', dialect)).toBeInstanceOf(TypeError)
      expect(make('reasoning', dialect)?.message).toMatch(
        new RegExp(
          `^openAICompatible: replayThinking 'reasoning' is not read by dialect '${dialect}'`,
        ),
      )
      expect(make('reasoning_content', dialect)).toBeUndefined()
    }
    for (const value of [undefined, true, false, 'reasoning', 'reasoning_content']) {
      expect(make(value)).toBeUndefined()
    }
  })
})
