import { once } from 'node:events'
import { createServer, type Server } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { Deadline, ManualClock } from '@hourglass/core'
import { afterEach, describe, expect, it } from 'vitest'
import { anthropic } from '../../src/adapters/anthropic.js'
import { gemini } from '../../src/adapters/gemini.js'
import type { ModelAdapter } from '../../src/adapters/ModelAdapter.js'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { END_GRACE_MS } from '../../src/adapters/readEvents.js'
import { callModel } from '../../src/call/callModel.js'
import { useFakes, user } from '../call/support/fakes.js'

const fakes = useFakes()

// Each provider's real wire format for one answer ("Hello"), up to and
// including its end marker. The testkit fake always ends the body after the
// marker, so these servers are written by hand.
const WIRE = {
  openai: [
    'data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"Hello"}}]}\n\n',
    'data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n',
    'data: {"id":"c1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1}}\n\n',
    'data: [DONE]\n\n',
  ],
  anthropic: [
    'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","usage":{"input_tokens":3}}}\n\n',
    'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n',
    'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}\n\n',
    'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n',
    'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":1}}\n\n',
    'event: message_stop\ndata: {"type":"message_stop"}\n\n',
  ],
  // Gemini has no [DONE]: the chunk with a finishReason is the last.
  gemini: [
    'data: {"candidates":[{"content":{"role":"model","parts":[{"text":"Hello"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":1},"responseId":"r1"}\r\n\r\n',
  ],
} as const
type Wire = keyof typeof WIRE

interface WireServer {
  server: Server
  baseURL: string
  /** TCP connections accepted so far. */
  connections: number
  /** Resolves when the connection of the first request closes, with the ms since its last write. */
  firstClosed: Promise<number>
}

const servers: Server[] = []
afterEach(() => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections()
    server.close()
  }
})

/**
 * Writes `wire`'s answer to every request; `keepOpen`: never ends the body
 * after the marker (a proxy holding it); `noMarker`: the answer without its
 * end marker (OpenAI's `[DONE]`), the body held open all the same.
 */
async function wireServer(wire: Wire, keepOpen: boolean, noMarker = false): Promise<WireServer> {
  let lastWriteAt = 0
  let closed: (ms: number) => void = () => {}
  const firstClosed = new Promise<number>((resolve) => {
    closed = resolve
  })
  const server = createServer((req, res) => {
    req.resume()
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
    const frames = noMarker ? WIRE[wire].slice(0, -1) : WIRE[wire]
    for (const frame of frames) res.write(frame)
    lastWriteAt = performance.now()
    // As over a real network: the end of the chunked body follows the
    // marker a moment later, in a packet of its own.
    if (!keepOpen) setTimeout(() => res.end(), 10)
  })
  const state = { server, baseURL: '', connections: 0, firstClosed }
  server.on('connection', (socket: Socket) => {
    state.connections++
    if (state.connections === 1) socket.once('close', () => closed(performance.now() - lastWriteAt))
  })
  servers.push(server)
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  state.baseURL =
    wire === 'anthropic' ? origin : `${origin}${wire === 'gemini' ? '/v1beta' : '/v1'}`
  return state
}

function adapterFor(wire: Wire, baseURL: string): ModelAdapter {
  const options = { baseURL, apiKey: 'sk', model: 'm' }
  return fakes.adapter(
    wire === 'anthropic'
      ? anthropic(options)
      : wire === 'gemini'
        ? gemini(options)
        : openAICompatible(options),
  )
}

const stream = (model: ModelAdapter, deadline: Deadline) =>
  callModel({
    models: [model],
    deadline,
    request: { messages: [user('Hi')], maxTokens: 10, stream: true },
  })

describe('a stream ends at the provider’s end marker', () => {
  it.each(['openai', 'anthropic', 'gemini'] as const)(
    '%s: a server that keeps the connection open after the marker still gives the whole answer at once, and its connection is closed',
    async (wire) => {
      const upstream = await wireServer(wire, true)
      // The grace after the marker runs on the call's clock: this one moves
      // only when the test says so.
      const clock = new ManualClock()
      using deadline = Deadline.after(3000, { clock })
      let closed = false
      void upstream.firstClosed.then(() => {
        closed = true
      })
      const started = performance.now()
      const answer = stream(adapterFor(wire, upstream.baseURL), deadline)
      const texts: string[] = []
      for await (const event of answer) if (event.type === 'text') texts.push(event.text)
      const response = await answer.result
      // Long before the deadline (which is where it ended before).
      expect(performance.now() - started).toBeLessThan(1000)
      expect(texts).toEqual(['Hello'])
      expect(response).toMatchObject({ text: 'Hello', finishReason: 'stop' })
      expect(response.usage).toMatchObject({ inputTokens: 3, outputTokens: 1 })
      // Released, not left reading until the body timeout or the deadline:
      // still open just before the grace ends, closed when it does.
      clock.advance(END_GRACE_MS - 1)
      await new Promise((resolve) => setTimeout(resolve, 20))
      expect(closed).toBe(false)
      clock.advance(1)
      // At once (not a second later, on some other clock): margin for a loaded box.
      const settled = await Promise.race([
        upstream.firstClosed.then(() => 'closed'),
        new Promise((resolve) => setTimeout(resolve, 500, 'still open after 500 ms')),
      ])
      expect(settled).toBe('closed')
    },
  )

  it('openai: a server that sends the whole answer (finish and usage) but neither [DONE] nor the end of the body gives the answer once the grace after its finish is over, not a failure at the deadline', async () => {
    const upstream = await wireServer('openai', true, true)
    const clock = new ManualClock()
    using deadline = Deadline.after(3000, { clock })
    const answer = stream(adapterFor('openai', upstream.baseURL), deadline)
    const read = (async () => {
      const types: string[] = []
      for await (const event of answer) {
        types.push(event.type)
        // The grace runs from the finish the call received, on the call's clock.
        if (event.type === 'finish') clock.advance(END_GRACE_MS)
      }
      return types
    })()
    // Before: nothing ended the read but the deadline, which failed the whole
    // answer as interrupted (STREAM_INTERRUPTED after its finish).
    const outcome = await Promise.race([
      read.then(
        (types) => types,
        (error: unknown) => `failed: ${String(error)}`,
      ),
      new Promise((resolve) => setTimeout(resolve, 2000, 'still reading 2 s after the finish')),
    ])
    expect(outcome).toEqual(['text', 'finish'])
    const response = await answer.result
    expect(response).toMatchObject({ text: 'Hello', finishReason: 'stop' })
    expect(response.usage).toMatchObject({ inputTokens: 3, outputTokens: 1 })
    // The connection held open is closed, not left to the deadline.
    await upstream.firstClosed
  })

  it('openai: a connection reset after the whole answer (finish and usage) instead of [DONE] is the whole answer, not an interruption', async () => {
    let socket: Socket | undefined
    const server = createServer((req, res) => {
      req.resume()
      socket = res.socket ?? undefined
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      for (const frame of WIRE.openai.slice(0, -1)) res.write(frame)
    })
    servers.push(server)
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    const baseURL = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`
    using deadline = Deadline.after(3000)
    const answer = stream(adapterFor('openai', baseURL), deadline)
    const types: string[] = []
    // Before: the finish, then STREAM_INTERRUPTED from the iterator and `result`.
    for await (const event of answer) {
      types.push(event.type)
      // The consumer has the finish: now the connection breaks (a proxy's reset).
      if (event.type === 'finish') socket?.resetAndDestroy()
    }
    expect(types).toEqual(['text', 'finish'])
    const response = await answer.result
    expect(response).toMatchObject({ text: 'Hello', finishReason: 'stop' })
    expect(response.usage).toMatchObject({ inputTokens: 3, outputTokens: 1 })
  })

  it('a body that ends right after the marker keeps its connection for the next call', async () => {
    const upstream = await wireServer('openai', false)
    const model = adapterFor('openai', upstream.baseURL)
    using deadline = Deadline.after(3000)
    for (let i = 0; i < 3; i++) {
      expect((await stream(model, deadline).result).text).toBe('Hello')
      // Let the end of the body arrive before the next call picks a connection.
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    expect(upstream.connections).toBe(1)
  })
})
