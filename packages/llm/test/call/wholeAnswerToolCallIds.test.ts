import type { IncomingMessage, ServerResponse } from 'node:http'
import { reply } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { runTurns } from '../../src/agent/runTurns.js'
import { callModel } from '../../src/call/callModel.js'
import type { ChatMessage } from '../../src/types.js'
import { rawServer } from '../adapters/support/rawServer.js'
import { useFakes, user } from './support/fakes.js'

// OpenAI-compatible servers that send a tool call without its id — Gemini's
// OpenAI compatibility endpoint (`"id": ""`), LM Studio, others leaving the
// field out: a streamed answer's calls got ids of their own
// (`call_<random>_<n>`), the same answer whole kept `""` for each. Two calls
// then shared one id: their results could not be told apart, and the next
// turn to Gemini's own API (a fallback) sent every result under the name of
// the last call — the weather's answer as the email's.

const fakes = useFakes()
const servers: { close(): void }[] = []
afterEach(() => {
  for (const server of servers.splice(0)) server.close()
})

const TOOLS = [
  { name: 'get_weather', parameters: { type: 'object' } },
  { name: 'send_email', parameters: { type: 'object' } },
]

/** Two parallel calls, the first with `"id": ""`, the second with no id at all. */
const CALLS = [
  { type: 'function', id: '', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
  { type: 'function', function: { name: 'send_email', arguments: '{"to":"bob"}' } },
]

/** Answers every request with CALLS, whole or streamed as it was asked. */
async function callsWithoutIds(): Promise<string> {
  const server = await rawServer((req: IncomingMessage, res: ServerResponse) => {
    let body = ''
    req.on('data', (chunk: Buffer) => {
      body += chunk.toString()
    })
    req.on('end', () => {
      const usage = { prompt_tokens: 5, completion_tokens: 5, total_tokens: 10 }
      if ((JSON.parse(body) as { stream?: boolean }).stream !== true) {
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end(
          JSON.stringify({
            id: 'chatcmpl-1',
            object: 'chat.completion',
            model: 'gemini-2.5-flash',
            choices: [
              {
                index: 0,
                message: { role: 'assistant', content: null, tool_calls: CALLS },
                finish_reason: 'tool_calls',
              },
            ],
            usage,
          }),
        )
        return
      }
      const delta = {
        role: 'assistant',
        tool_calls: CALLS.map((call, index) => ({ index, ...call })),
      }
      const chunk = { id: 'chatcmpl-1', model: 'gemini-2.5-flash' }
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.write(
        `data: ${JSON.stringify({ ...chunk, choices: [{ index: 0, delta, finish_reason: 'tool_calls' }] })}\n\n`,
      )
      res.write(`data: ${JSON.stringify({ ...chunk, choices: [], usage })}\n\n`)
      res.end('data: [DONE]\n\n')
    })
  })
  servers.push(server)
  return server.baseURL
}

function ask(baseURL: string, messages: ChatMessage[], stream: boolean) {
  const request = { messages, maxTokens: 50, tools: TOOLS }
  const models = [fakes.adapterFor('openai', baseURL, 'gemini-2.5-flash')]
  const limits = { admission: false as const }
  return stream
    ? callModel({ models, request: { ...request, stream: true }, limits }).result
    : callModel({ models, request, limits })
}

const GENERATED = /^call_[0-9a-f]{12}_\d+$/

describe.each([false, true])('stream: %s', (stream) => {
  it('calls sent without an id get ids of their own, one each', async () => {
    const answer = await ask(await callsWithoutIds(), [user('weather, then mail')], stream)
    const calls = answer.content.filter((block) => block.type === 'tool_call')
    expect(calls.map((call) => call.name)).toEqual(['get_weather', 'send_email'])
    expect(calls.map((call) => call.id)).toEqual([
      expect.stringMatching(GENERATED),
      expect.stringMatching(GENERATED),
    ])
    expect(new Set(calls.map((call) => call.id)).size).toBe(2)
  })
})

it("the next turn to Gemini's own API answers each call under its own name", async () => {
  const compatible = await callsWithoutIds()
  const google = await fakes.start({ dialect: 'gemini' })
  google.enqueue(reply.text('Sent.'))
  const native = fakes.adapterFor('gemini', google.baseURL, 'gemini-2.5-flash')
  let turn = 0
  const run = await runTurns({
    operationId: 'weather-then-mail',
    messages: [user('weather, then mail')],
    tools: { get_weather: async () => 'sunny', send_email: async () => 'sent' },
    call: (messages, { idempotencyKey, signal }) =>
      turn++ === 0
        ? ask(compatible, messages, false)
        : callModel({
            models: [native],
            request: { messages, maxTokens: 50, tools: TOOLS },
            idempotencyKey,
            signal,
            limits: { admission: false },
          }),
  })
  expect(run.response.text).toBe('Sent.')
  expect(google.requests).toHaveLength(1)
  const { contents } = google.requests[0]!.body as { contents: { parts: unknown[] }[] }
  const responses = contents.flatMap((content) =>
    content.parts.flatMap((part) => {
      const response = (part as { functionResponse?: { name: string; response: unknown } })
        .functionResponse
      return response === undefined ? [] : [[response.name, response.response]]
    }),
  )
  expect(responses).toEqual([
    ['get_weather', { result: 'sunny' }],
    ['send_email', { result: 'sent' }],
  ])
})
