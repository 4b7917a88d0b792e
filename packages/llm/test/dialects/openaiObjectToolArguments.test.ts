import { afterEach, describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { runTurns } from '../../src/agent/runTurns.js'
import { callModel } from '../../src/call/callModel.js'
import { dialects } from '../../src/dialects/dialects.js'
import type { ChatResponse, StreamEvent } from '../../src/types.js'
import { rawServer } from '../adapters/support/rawServer.js'

/**
 * Some OpenAI-compatible servers send a tool call's `function.arguments` as
 * the JSON object itself, not as the JSON text OpenAI sends (llama.cpp's
 * llama-server did so by default in March 2026, ggml-org/llama.cpp#20198;
 * TGI, huggingface/text-generation-inference#2136). Read as text only, the
 * call came out with arguments `{}`: the tool ran with none of them.
 */

const servers: Array<{ close(): void }> = []
afterEach(() => {
  for (const server of servers.splice(0)) server.close()
})

const tools = [{ name: 'send_email', parameters: { type: 'object' } }]
const messages = [{ role: 'user' as const, content: 'mail Ada' }]
// An id past 2^53: written again from the parsed object it would read …200.
const ARGS_TEXT = '{"to":"ada@example.com","order":1859312345678901234}'

const wholeBodyOf = (args: string) =>
  `{"id":"c1","object":"chat.completion","model":"local","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"send_email","arguments":${args}}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":9,"completion_tokens":7}}`

const streamBodyOf = (args: string) =>
  [
    `data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"send_email","arguments":${args}}}]},"finish_reason":null}]}\n\n`,
    'data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}\n\n',
    'data: [DONE]\n\n',
  ].join('')

/** A server that answers a tool call with object arguments, then (for an agent's next turn) a text answer. */
async function objectArgumentsServer(args = ARGS_TEXT) {
  let requests = 0
  const server = await rawServer((req, res) => {
    let body = ''
    req.on('data', (chunk: Buffer) => {
      body += chunk.toString()
    })
    req.on('end', () => {
      requests++
      const stream = (JSON.parse(body) as { stream?: boolean }).stream === true
      if (requests > 1) {
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end(
          '{"id":"c2","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"sent"},"finish_reason":"stop"}]}',
        )
        return
      }
      res.writeHead(200, { 'content-type': stream ? 'text/event-stream' : 'application/json' })
      res.end(stream ? streamBodyOf(args) : wholeBodyOf(args))
    })
  })
  servers.push(server)
  return openAICompatible({ baseURL: server.baseURL, apiKey: 'sk', model: 'local' })
}

function toolCallOf(response: ChatResponse) {
  const call = response.content.find((block) => block.type === 'tool_call')
  if (call?.type !== 'tool_call') throw new Error('no tool call in the answer')
  return call
}

describe('an OpenAI-compatible tool call whose arguments come as a JSON object', () => {
  it('a whole answer keeps the arguments, as the server wrote them', async () => {
    const adapter = await objectArgumentsServer()
    const answer = await callModel({
      models: [adapter],
      request: { messages, maxTokens: 64, tools },
      limits: { admission: false },
    })
    await adapter.close()
    const call = toolCallOf(answer)
    // Parsed, the id is rounded (as from a string); the text keeps it whole.
    expect(call.arguments).toMatchObject({ to: 'ada@example.com' })
    expect(call.rawArguments).toBe(ARGS_TEXT)
  })

  it('a stream hands the arguments on as their text, and its answer keeps them', async () => {
    const adapter = await objectArgumentsServer()
    const stream = callModel({
      models: [adapter],
      request: { messages, maxTokens: 64, tools, stream: true },
      limits: { admission: false },
    })
    const deltas: string[] = []
    for await (const event of stream)
      if (event.type === 'tool_call') deltas.push(event.argumentsDelta)
    const answer = await stream.result
    await adapter.close()
    expect(deltas.join('')).toBe(ARGS_TEXT)
    expect(toolCallOf(answer).rawArguments).toBe(ARGS_TEXT)
    expect(toolCallOf(answer).arguments).toMatchObject({ to: 'ada@example.com' })
  })

  it('an agent runs the tool with its arguments, not with {}', async () => {
    const adapter = await objectArgumentsServer('{"to":"ada@example.com","order":42}')
    const seen: unknown[] = []
    const run = await runTurns({
      operationId: 'mail-ada',
      messages,
      deadline: false,
      tools: {
        send_email: (args) => {
          seen.push(args)
          return 'ok'
        },
      },
      call: (history, { idempotencyKey, signal }) =>
        callModel({
          models: [adapter],
          request: { messages: history, maxTokens: 64, tools },
          idempotencyKey,
          signal,
          limits: { admission: false },
        }),
    })
    await adapter.close()
    expect(run.response.text).toBe('sent')
    expect(seen).toEqual([{ to: 'ada@example.com', order: 42 }])
  })

  it('the parsers: a body handed over parsed, without its text, has the object written again; a chunk keeps its text', () => {
    const parsed = JSON.parse(wholeBodyOf('{"to":"ada@example.com","order":42}')) as unknown
    const call = toolCallOf(dialects.openai.parseResponse(parsed))
    expect(call.rawArguments).toBe('{"to":"ada@example.com","order":42}')
    const parser = dialects.openai.createStreamParser()
    const events: StreamEvent[] = parser.parseStreamEvent({
      event: 'message',
      data: streamBodyOf(ARGS_TEXT).split('\n\n')[0]?.slice('data: '.length) ?? '',
    })
    const delta = events.find((event) => event.type === 'tool_call')
    expect(delta?.type === 'tool_call' && delta.argumentsDelta).toBe(ARGS_TEXT)
  })
})
