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

type Body = { stream?: boolean; messages: Array<Record<string, unknown>> }

/**
 * A server answering each body with `answer`'s status, text and content
 * type (default JSON); every body it got.
 */
async function scripted(answer: (body: Body) => [number, string, string?]) {
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
      const [status, reply, type = 'application/json'] = answer(body)
      res.writeHead(status, { 'content-type': type })
      res.end(reply)
    })
  })
  servers.push(server)
  return { baseURL: server.baseURL, bodies }
}

const ANSWER = whole('c2', { role: 'assistant', content: '4 °C' }, 'stop')

/**
 * An OpenAI-compatible server that thinks under `field` and calls `weather`
 * on the first turn (as a stream when asked for one, or as a whole answer
 * when `wholeAlways`), and answers on the second; every body it got.
 */
async function thinkingServer(field: Field, wholeAlways = false) {
  let turns = 0
  return scripted((body) => {
    turns++
    if (turns > 1) return [200, ANSWER]
    if (body.stream === true && !wholeAlways) return [200, streamed(field), 'text/event-stream']
    return [200, whole('c1', thinkingCall(field), 'tool_calls')]
  })
}

/**
 * The weather loop over `models` in order (streamed when `stream`, with
 * `retry` when given); the models closed after.
 */
async function loop(
  models: ModelAdapter[],
  { stream = false, retry }: { stream?: boolean; retry?: { maxAttempts: number } } = {},
) {
  try {
    return await runTurns({
      // One operation per loop: runTurns remembers each turn's answer under it.
      operationId: `weather-${randomUUID()}`,
      deadline: false,
      messages: [{ role: 'user', content: 'weather in Oslo?' }],
      tools: { weather: () => '4 °C' },
      call: (history, { idempotencyKey, signal }) => {
        const options = {
          models,
          request: { messages: history, maxTokens: 64, tools },
          idempotencyKey,
          signal,
          limits: { admission: false as const },
          ...(retry === undefined ? {} : { retry }),
        }
        return stream
          ? callModel({ ...options, request: { ...options.request, stream: true } }).result
          : callModel(options)
      },
    })
  } finally {
    for (const model of models) await model.close()
  }
}

/** An OpenAI-compatible adapter to `baseURL` that replays thinking (`true` unless `options` say otherwise). */
const replaying = (
  baseURL: string,
  model: string,
  options: Partial<OpenAICompatibleOptions> = {},
) => openAICompatible({ baseURL, apiKey: 'sk', model, replayThinking: true, ...options })

/** The thinking sent back under `field` alone. */
function expectReplayedAs(assistant: unknown, field: Field) {
  expect(assistant).toMatchObject({ role: 'assistant', [field]: THOUGHT })
  expect(assistant).not.toHaveProperty(field === 'reasoning' ? 'reasoning_content' : 'reasoning')
}

/**
 * A two-turn `runTurns` loop through `replayThinking` (`true` unless
 * `replay` says otherwise); the assistant message sent on the second turn.
 */
async function replayed(
  server: { baseURL: string; bodies: Body[] },
  stream: boolean,
  replay: OpenAICompatibleOptions['replayThinking'] = true,
) {
  const run = await loop([replaying(server.baseURL, 'qwen3', { replayThinking: replay })], {
    stream,
  })
  expect(run.response.text).toBe('4 °C')
  expect(server.bodies).toHaveLength(2)
  return server.bodies[1]?.messages.find((message) => message['role'] === 'assistant')
}

/**
 * Thinking said under `said`, replayed whole and streamed (`replayThinking:
 * replay`), goes back under `back` alone.
 */
async function expectSentBackAs(
  said: Field,
  back: Field,
  replay: OpenAICompatibleOptions['replayThinking'] = true,
) {
  for (const stream of [false, true]) {
    expectReplayedAs(await replayed(await thinkingServer(said), stream, replay), back)
  }
}

describe('replayThinking sends thinking back under the name the server said it under', () => {
  it("vLLM's `reasoning`, whole: back as `reasoning`, not `reasoning_content`", async () => {
    const assistant = await replayed(await thinkingServer('reasoning'), false)
    expectReplayedAs(assistant, 'reasoning')
  })

  it("vLLM's `reasoning`, streamed: back as `reasoning`, the deltas joined", async () => {
    const assistant = await replayed(await thinkingServer('reasoning'), true)
    expectReplayedAs(assistant, 'reasoning')
  })

  it('a stream request answered whole (JSON): back as `reasoning`', async () => {
    const assistant = await replayed(await thinkingServer('reasoning', true), true)
    expectReplayedAs(assistant, 'reasoning')
  })

  it("DeepSeek's `reasoning_content`, whole and streamed: back as `reasoning_content` only", async () => {
    await expectSentBackAs('reasoning_content', 'reasoning_content')
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

const SERVER_ERROR = JSON.stringify({ error: { message: 'Internal error', type: 'server_error' } })
const hasToolResult = (body: Body) => body.messages.some((m) => m['role'] === 'tool')
const assistantIn = (body: Body | undefined) =>
  body?.messages.find((m) => m['role'] === 'assistant')

/** Each model asked once per turn. */
const ONCE = { retry: { maxAttempts: 1 } }

/**
 * The loop answered, each server asked as often as `asked` says, and the
 * assistant message in `sent` carried the thinking under `field` alone.
 */
function expectAnswered(
  run: { response: { text: string } },
  asked: Array<[{ bodies: Body[] }, number]>,
  sent: Body | undefined,
  field: Field,
) {
  expect(run.response.text).toBe('4 °C')
  for (const [server, times] of asked) expect(server.bodies).toHaveLength(times)
  expectReplayedAs(assistantIn(sent), field)
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
    const run = await loop(
      [
        replaying(deepseek.baseURL, 'deepseek-reasoner', { dialect: 'deepseek' }),
        replaying(vllm.baseURL, 'qwen3'),
      ],
      ONCE,
    )
    expectAnswered(
      run,
      [
        [vllm, 1],
        [deepseek, 2],
      ],
      deepseek.bodies[1],
      'reasoning_content',
    )
  })

  it("a vLLM fallback after a vLLM primary's turn gets `reasoning`, the only name vLLM reads", async () => {
    // Model A thinks and calls the tool on turn 1, and is down on turn 2.
    const a = await scripted((body) =>
      hasToolResult(body)
        ? [500, SERVER_ERROR]
        : [200, whole('c1', thinkingCall('reasoning'), 'tool_calls')],
    )
    const b = await scripted(() => [200, ANSWER])
    const run = await loop(
      [replaying(a.baseURL, 'qwen3-32b'), replaying(b.baseURL, 'qwen3-8b')],
      ONCE,
    )
    expectAnswered(
      run,
      [
        [a, 2],
        [b, 1],
      ],
      b.bodies[0],
      'reasoning',
    )
  })
})

describe("replayThinking: 'reasoning' | 'reasoning_content' names the field whatever the thinking came under", () => {
  it("'reasoning': thinking said as `reasoning_content` goes back as `reasoning`", async () => {
    await expectSentBackAs('reasoning_content', 'reasoning', 'reasoning')
  })

  it("'reasoning_content': thinking said as `reasoning` goes back as `reasoning_content`", async () => {
    await expectSentBackAs('reasoning', 'reasoning_content', 'reasoning_content')
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
