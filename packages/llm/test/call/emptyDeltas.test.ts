import { once } from 'node:events'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { anthropic } from '../../src/adapters/anthropic.js'
import { gemini } from '../../src/adapters/gemini.js'
import type { ModelAdapter } from '../../src/adapters/ModelAdapter.js'
import { callModel } from '../../src/call/callModel.js'
import { FAST_RETRIES, useFakes, user } from './support/fakes.js'

const fakes = useFakes()
const servers: Server[] = []
afterEach(() => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections()
    server.close()
  }
})

const anthropicEvent = (type: string, fields: Record<string, unknown>) =>
  `event: ${type}\ndata: ${JSON.stringify({ type, ...fields })}\n\n`

// Each provider's real wire: an empty text delta, then an overload frame
// (first request), or the answer "Hello" (every request after it).
const WIRE = {
  anthropic: {
    empty:
      anthropicEvent('message_start', { message: { id: 'msg_1', usage: { input_tokens: 3 } } }) +
      anthropicEvent('content_block_start', {
        index: 0,
        content_block: { type: 'text', text: '' },
      }) +
      anthropicEvent('content_block_delta', { index: 0, delta: { type: 'text_delta', text: '' } }),
    overloaded: anthropicEvent('error', {
      error: { type: 'overloaded_error', message: 'Overloaded' },
    }),
    answer:
      anthropicEvent('content_block_delta', {
        index: 0,
        delta: { type: 'text_delta', text: 'Hello' },
      }) +
      anthropicEvent('content_block_stop', { index: 0 }) +
      anthropicEvent('message_delta', {
        delta: { stop_reason: 'end_turn' },
        usage: { output_tokens: 1 },
      }) +
      anthropicEvent('message_stop', {}),
  },
  gemini: {
    empty: `data: ${JSON.stringify({ candidates: [{ content: { role: 'model', parts: [{ text: '' }] } }] })}\r\n\r\n`,
    overloaded: `data: ${JSON.stringify({ error: { code: 503, message: 'The model is overloaded. Please try again later.', status: 'UNAVAILABLE' } })}\r\n\r\n`,
    answer: `data: ${JSON.stringify({ candidates: [{ content: { role: 'model', parts: [{ text: 'Hello' }] }, finishReason: 'STOP' }], usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 1 } })}\r\n\r\n`,
  },
} as const

async function wireServer(
  wire: keyof typeof WIRE,
): Promise<{ baseURL: string; requests: () => number }> {
  let requests = 0
  const server = createServer((req, res) => {
    req.resume()
    res.writeHead(200, { 'content-type': 'text/event-stream' })
    res.write(WIRE[wire].empty)
    res.end(requests++ === 0 ? WIRE[wire].overloaded : WIRE[wire].answer)
  })
  servers.push(server)
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return { baseURL: wire === 'gemini' ? `${origin}/v1beta` : origin, requests: () => requests }
}

describe('an empty text delta is no first token', () => {
  it.each(['anthropic', 'gemini'] as const)(
    '%s: an overload frame after an empty text delta is retried, and the caller reads only the answer',
    async (wire) => {
      const upstream = await wireServer(wire)
      const options = { baseURL: upstream.baseURL, apiKey: 'sk', model: 'm' }
      const model: ModelAdapter = fakes.adapter(
        wire === 'gemini' ? gemini(options) : anthropic(options),
      )
      const stream = callModel({
        models: [model],
        request: { messages: [user('Hi')], maxTokens: 10, stream: true },
        limits: { admission: false },
        retry: {
          budgets: false,
          delay: FAST_RETRIES,
        },
      })
      const types: string[] = []
      for await (const event of stream) types.push(event.type)
      // Before: "broke after the first token (0 characters received); not
      // restarted" — a STREAM_INTERRUPTED failure after one request.
      expect((await stream.result).text).toBe('Hello')
      expect(types).toEqual(['text', 'finish'])
      expect(upstream.requests()).toBe(2)
    },
  )
})
