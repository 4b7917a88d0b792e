import { once } from 'node:events'
import { Deadline, ManualClock } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { anthropic } from '../../src/adapters/anthropic.js'
import type { SendOptions } from '../../src/adapters/ModelAdapter.js'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { END_GRACE_MS, type EventBody, readEvents } from '../../src/adapters/readEvents.js'
import { callModel } from '../../src/call/callModel.js'
import { dialects } from '../../src/dialects/dialects.js'
import type { StreamEvent } from '../../src/types.js'
import { useFakes, user } from '../call/support/fakes.js'
import { WaitClock } from '../support/waitClock.js'
import { rawServer } from './support/rawServer.js'

const fakes = useFakes()

/** OpenAI's wire for one answer ("Hello"), up to and including its end marker. */
const WIRE = [
  'data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"Hello"}}]}\n\n',
  'data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n',
  'data: {"id":"c1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1}}\n\n',
  'data: [DONE]\n\n',
]

/**
 * A body that hands out `chunks`, then neither ends nor sends anything more
 * (a proxy holding the response open after the end marker) until destroyed.
 */
function heldOpenBody(chunks: readonly string[]): EventBody & { destroyed: boolean } {
  const queue = chunks.map((chunk) => new TextEncoder().encode(chunk))
  let release: () => void = () => {}
  const held = new Promise<IteratorResult<Uint8Array>>((resolve) => {
    release = () => resolve({ done: true, value: undefined })
  })
  const body = {
    destroyed: false,
    destroy() {
      body.destroyed = true
      release()
    },
    [Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
      return {
        next: () => {
          const value = queue.shift()
          return value === undefined ? held : Promise.resolve({ done: false, value })
        },
        return: async () => {
          body.destroy()
          return { done: true, value: undefined }
        },
      }
    },
  }
  return body
}

describe('the grace after a stream’s end marker runs on the call’s clock', () => {
  it('readEvents: the answer ends at the marker; the open body is destroyed when the manual clock passes the grace', async () => {
    const clock = new ManualClock()
    const deadline = Deadline.after(60_000, { clock })
    const signal = new AbortController().signal
    const send: SendOptions = { apiKey: undefined, idempotencyKey: 'k', deadline, signal }
    const body = heldOpenBody(WIRE)
    const events: StreamEvent[] = []
    const context = { provider: 'openai', model: 'm', signal, deadline }
    for await (const event of readEvents(body, dialects.openai, send, context, 1 << 20)) {
      events.push(event)
    }
    // Complete at the marker, with no time passing: the body was not waited for.
    expect(events.filter((e) => e.type === 'text')).toEqual([{ type: 'text', text: 'Hello' }])
    expect(events.at(-1)).toMatchObject({ type: 'finish', finishReason: 'stop' })
    expect(body.destroyed).toBe(false)
    clock.advance(END_GRACE_MS - 1)
    expect(body.destroyed).toBe(false)
    clock.advance(1)
    expect(body.destroyed).toBe(true)
  })

  it('readEvents: a body that ends right after the marker leaves no timer behind on the clock', async () => {
    const clock = new ManualClock()
    const deadline = Deadline.after(60_000, { clock })
    const armed = clock.pendingTimers
    const signal = new AbortController().signal
    const send: SendOptions = { apiKey: undefined, idempotencyKey: 'k', deadline, signal }
    const chunks = WIRE.map((chunk) => new TextEncoder().encode(chunk))
    let ended: () => void = () => {}
    const drained = new Promise<void>((resolve) => {
      ended = resolve
    })
    const body: EventBody = {
      destroy() {},
      async *[Symbol.asyncIterator]() {
        yield* chunks
        ended()
      },
    }
    const context = { provider: 'openai', model: 'm', signal, deadline }
    for await (const _ of readEvents(body, dialects.openai, send, context, 1 << 20)) {
      // read to the end
    }
    await drained
    await new Promise((resolve) => setImmediate(resolve))
    expect(clock.pendingTimers).toBe(armed)
  })

  it('readEvents: a body that fails inside the grace (a cut) leaves no timer behind on the clock', async () => {
    const clock = new ManualClock()
    const deadline = Deadline.after(60_000, { clock })
    const armed = clock.pendingTimers
    const signal = new AbortController().signal
    const send: SendOptions = { apiKey: undefined, idempotencyKey: 'k', deadline, signal }
    // The stop reason, then the connection is cut before usage or [DONE].
    const chunks = WIRE.slice(0, 2).map((chunk) => new TextEncoder().encode(chunk))
    const body: EventBody = {
      destroy() {},
      async *[Symbol.asyncIterator]() {
        yield* chunks
        await new Promise((resolve) => setImmediate(resolve))
        throw Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' })
      },
    }
    const context = { provider: 'openai', model: 'm', signal, deadline }
    const read = (async () => {
      for await (const _ of readEvents(body, dialects.openai, send, context, 1 << 20)) {
        // read until it fails
      }
    })()
    // The stop reason had come: the read ends with the held-back finish, a
    // whole answer (cutWhileFinishing.test.ts), and the grace's timer is gone.
    await expect(read).resolves.toBeUndefined()
    expect(clock.pendingTimers).toBe(armed)
  })

  it('callModel: a server that keeps the connection open after [DONE]: answered at once, the connection closed when the call’s clock passes the grace', async () => {
    let closed: Promise<unknown> | undefined
    const server = await rawServer((req, res) => {
      req.resume()
      closed = once(res, 'close')
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      for (const frame of WIRE) res.write(frame)
      // and never res.end()
    })
    try {
      const clock = new WaitClock()
      const deadline = Deadline.after(60_000, { clock })
      const model = fakes.adapter(
        openAICompatible({ baseURL: server.baseURL, apiKey: 'sk', model: 'm' }),
      )
      const answer = await callModel({
        models: [model],
        deadline,
        request: { messages: [user('Hi')], maxTokens: 10, stream: true },
        limits: { admission: false },
      }).result
      expect(answer.text).toBe('Hello')
      // The body's release waits on the call's clock, not on a timer of its own.
      expect(clock.nextTimerAt()).toBe(clock.now() + END_GRACE_MS)
      clock.advance(END_GRACE_MS)
      await closed
    } finally {
      server.close()
    }
  })
})

describe('a stream whose stop reason came, but not the rest, ends after the grace, not at the deadline', () => {
  const OPENAI_NO_USAGE = WIRE.slice(0, 2)
  const ANTHROPIC_NO_STOP = [
    'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","usage":{"input_tokens":3}}}\n\n',
    'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n',
    'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}\n\n',
    'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n',
    'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":1}}\n\n',
    ': ping\n\n',
  ]

  it.each([
    [
      'openai: a finish_reason chunk, then no usage (include_usage ignored), no [DONE], the body open',
      'openai',
      OPENAI_NO_USAGE,
    ],
    [
      'anthropic: message_delta with its stop_reason, then no message_stop, the body open',
      'anthropic',
      ANTHROPIC_NO_STOP,
    ],
  ] as const)('%s', async (_, wire, frames) => {
    let closed: Promise<unknown> | undefined
    const server = await rawServer((req, res) => {
      req.resume()
      closed = once(res, 'close')
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      for (const frame of frames) res.write(frame)
      // and never res.end()
    })
    try {
      const clock = new WaitClock()
      const deadline = Deadline.after(60_000, { clock })
      // A key of a real key's length: redacted, so the dialect's parser is wrapped (keyRedaction), as in production.
      const options = { baseURL: server.baseURL, apiKey: 'sk-test-0123456789abcdef', model: 'm' }
      const model = fakes.adapter(
        wire === 'openai'
          ? openAICompatible(options)
          : anthropic({ ...options, baseURL: server.baseURL.replace(/\/v1$/, '') }),
      )
      // The grace is a wait on the call's clock, armed once the stop reason is read.
      const armed = new Promise<void>((resolve) => {
        const stop = clock.onChange(() => {
          if (clock.pendingWaits > 0) {
            stop()
            resolve()
          }
        })
      })
      const stream = callModel({
        models: [model],
        deadline,
        request: { messages: [user('Hi')], maxTokens: 10, stream: true },
        limits: { admission: false },
      })
      const types: string[] = []
      const read = (async () => {
        for await (const event of stream) types.push(event.type)
      })()
      // Before: no grace was armed; the read went on until the deadline, which
      // failed the whole answer as STREAM_INTERRUPTED.
      const outcome = await Promise.race([
        armed.then(() => 'armed'),
        new Promise((resolve) => setTimeout(resolve, 3000, 'no grace armed after the stop reason')),
      ])
      expect(outcome).toBe('armed')
      clock.advance(END_GRACE_MS - 1)
      await new Promise((resolve) => setImmediate(resolve))
      expect(types).toEqual(['text'])
      clock.advance(1)
      await read
      expect(types).toEqual(['text', 'finish'])
      const answer = await stream.result
      expect(answer).toMatchObject({ text: 'Hello', finishReason: 'stop' })
      if (wire === 'anthropic')
        expect(answer.usage).toMatchObject({ inputTokens: 3, outputTokens: 1 })
      // The connection held open is closed at once, not left to the deadline.
      await closed
    } finally {
      server.close()
    }
  })
  it.each([
    [
      'openai: the deadline ends within the grace after the finish_reason chunk',
      'openai',
      OPENAI_NO_USAGE,
    ],
    [
      'anthropic: the deadline ends within the grace after message_delta',
      'anthropic',
      ANTHROPIC_NO_STOP,
    ],
  ] as const)('%s: the answer, not deadline_exceeded', async (_, wire, frames) => {
    // The answer, then its stop reason only when the test says.
    let stopReason: () => void = () => {}
    const stopped = new Promise<void>((resolve) => {
      stopReason = resolve
    })
    const server = await rawServer(async (req, res) => {
      req.resume()
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      const at = frames.findIndex((frame) => frame.includes('_reason":"'))
      for (const frame of frames.slice(0, at)) res.write(frame)
      await stopped
      for (const frame of frames.slice(at)) res.write(frame)
      // and never res.end()
    })
    try {
      const clock = new WaitClock()
      const deadline = Deadline.after(5000, { clock })
      const options = { baseURL: server.baseURL, apiKey: 'sk-test-0123456789abcdef', model: 'm' }
      const model = fakes.adapter(
        wire === 'openai'
          ? openAICompatible(options)
          : anthropic({ ...options, baseURL: server.baseURL.replace(/\/v1$/, '') }),
      )
      const stream = callModel({
        models: [model],
        deadline,
        request: { messages: [user('Hi')], maxTokens: 10, stream: true },
        limits: { admission: false },
      })
      const types: string[] = []
      let texted: () => void = () => {}
      const text = new Promise<void>((resolve) => {
        texted = resolve
      })
      const read = (async () => {
        for await (const event of stream) {
          types.push(event.type)
          if (event.type === 'text') texted()
        }
      })()
      await text
      // The stop reason comes 500 ms before the deadline; the grace is armed.
      clock.advance(4500)
      const armed = new Promise<void>((resolve) => {
        const stop = clock.onChange(() => {
          if (clock.pendingWaits > 0) {
            stop()
            resolve()
          }
        })
      })
      stopReason()
      await armed
      clock.advance(END_GRACE_MS - 1)
      // Before: STREAM_INTERRUPTED, its cause the deadline — the answer lost.
      await read
      expect(types).toEqual(['text', 'finish'])
      expect(await stream.result).toMatchObject({ text: 'Hello', finishReason: 'stop' })
    } finally {
      server.close()
    }
  })
  it('an error frame after the stop reason, the clock past an observed deadline: still a broken stream, not the answer', async () => {
    // Read by the clock alone (`expired`), the deadline "ended" a read an
    // error frame ended: the provider's overload came out a success.
    const server = await rawServer(async (req, res) => {
      req.resume()
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.end(
        ANTHROPIC_NO_STOP.slice(0, 5).join('') +
          'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n',
      )
    })
    try {
      const clock = new ManualClock()
      const deadline = Deadline.after(100, { clock, observe: true })
      clock.advance(200)
      const model = fakes.adapter(
        anthropic({
          baseURL: server.baseURL.replace(/\/v1$/, ''),
          apiKey: 'sk-test-0123456789abcdef',
          model: 'm',
        }),
      )
      const stream = callModel({
        models: [model],
        deadline,
        request: { messages: [user('Hi')], maxTokens: 10, stream: true },
        retry: { maxAttempts: 1 },
        limits: { admission: false },
      })
      const types: string[] = []
      const read = (async () => {
        for await (const event of stream) types.push(event.type)
      })()
      await expect(read).rejects.toMatchObject({ code: 'STREAM_INTERRUPTED' })
      expect(types).toEqual(['text'])
    } finally {
      server.close()
    }
  })
})
