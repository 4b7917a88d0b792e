import diagnostics from 'node:diagnostics_channel'
import { Deadline, ManualClock } from '@hourglass/core'
import { faultServer } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { anthropic } from '../../src/adapters/anthropic.js'
import { Admission } from '../../src/admission/Admission.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import { llmChannels } from '../../src/channels.js'
import type { ChatResponse } from '../../src/types.js'
import { rawServer } from '../adapters/support/rawServer.js'
import { useFakes, user } from './support/fakes.js'

const fakes = useFakes()
const servers: Array<{ close(): Promise<void> }> = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()))
})

const DATA = 'EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP'
const event = (type: string, data: Record<string, unknown>) =>
  `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`

/** Anthropic's answer: reasoning its safety systems encrypted, then a tool call. */
const streamed =
  event('message_start', {
    message: {
      id: 'msg_1',
      type: 'message',
      role: 'assistant',
      content: [],
      model: 'claude',
      usage: { input_tokens: 5, output_tokens: 1 },
    },
  }) +
  event('content_block_start', {
    index: 0,
    content_block: { type: 'redacted_thinking', data: DATA },
  }) +
  event('content_block_stop', { index: 0 }) +
  event('content_block_start', {
    index: 1,
    content_block: { type: 'tool_use', id: 'toolu_1', name: 'weather', input: {} },
  }) +
  event('content_block_delta', {
    index: 1,
    delta: { type: 'input_json_delta', partial_json: '{"city":"Paris"}' },
  }) +
  event('content_block_stop', { index: 1 }) +
  event('message_delta', { delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 9 } }) +
  event('message_stop', {})
const whole = JSON.stringify({
  id: 'msg_1',
  type: 'message',
  role: 'assistant',
  model: 'claude',
  stop_reason: 'tool_use',
  usage: { input_tokens: 5, output_tokens: 9 },
  content: [
    { type: 'redacted_thinking', data: DATA },
    { type: 'tool_use', id: 'toolu_1', name: 'weather', input: { city: 'Paris' } },
  ],
})
const done = JSON.stringify({
  id: 'msg_2',
  type: 'message',
  role: 'assistant',
  model: 'claude',
  stop_reason: 'end_turn',
  usage: { input_tokens: 5, output_tokens: 1 },
  content: [{ type: 'text', text: 'Sunny.' }],
})

describe('Anthropic redacted thinking', () => {
  it.each([false, true])(
    'is kept (stream: %s) and goes back as the same redacted_thinking block before the tool call',
    async (stream) => {
      const bodies: Array<{ stream?: boolean; messages: unknown[] }> = []
      const server = await faultServer((_request, i) =>
        i === 0
          ? stream
            ? { type: 'respond', headers: { 'content-type': 'text/event-stream' }, body: streamed }
            : { type: 'respond', headers: { 'content-type': 'application/json' }, body: whole }
          : { type: 'respond', headers: { 'content-type': 'application/json' }, body: done },
      )
      servers.push(server)
      server.server.on('request', (req) => {
        let text = ''
        req.on('data', (c: Buffer) => {
          text += c
        })
        req.on('end', () => bodies.push(JSON.parse(text)))
      })
      const model = fakes.adapter(anthropic({ baseURL: server.url, apiKey: 'sk', model: 'claude' }))
      const ask = [user('Weather in Paris?')]
      let answer: ChatResponse
      if (stream) {
        const call = callModel({
          models: [model],
          request: { messages: ask, maxTokens: 64, stream: true },
          limits: { admission: false },
        })
        for await (const _ of call) {
          // drained
        }
        answer = await call.result
      } else {
        answer = await callModel({
          models: [model],
          request: { messages: ask, maxTokens: 64 },
          limits: { admission: false },
        })
      }
      // Before: streamed, the block was dropped ([tool_call] alone); whole, it had no `redacted`.
      expect(answer.content).toEqual([
        {
          type: 'thinking',
          thinking: '',
          signature: DATA,
          redacted: true,
          signedBy: 'claude@anthropic',
        },
        { type: 'tool_call', id: 'toolu_1', name: 'weather', arguments: { city: 'Paris' } },
      ])
      await callModel({
        models: [model],
        request: {
          messages: [
            ...ask,
            { role: 'assistant', content: answer.content },
            {
              role: 'tool',
              content: [{ type: 'tool_result', toolCallId: 'toolu_1', content: 'sunny' }],
            },
          ],
          maxTokens: 64,
        },
        limits: { admission: false },
      })
      // Before: `{ type: 'thinking', thinking: '', signature: DATA }`, or nothing at all.
      expect(bodies[1]?.messages[1]).toEqual({
        role: 'assistant',
        content: [
          { type: 'redacted_thinking', data: DATA },
          { type: 'tool_use', id: 'toolu_1', name: 'weather', input: { city: 'Paris' } },
        ],
      })
    },
  )

  it('is the first token: firstTokenMs is its time, what stopped firstTokenTimeoutMs, not the answer’s after it', async () => {
    const clock = new ManualClock()
    let think: () => void = () => {}
    let answer: () => void = () => {}
    const thought = new Promise<void>((resolve) => {
      think = resolve
    })
    const answered = new Promise<void>((resolve) => {
      answer = resolve
    })
    let sent: () => void = () => {}
    const asked = new Promise<void>((resolve) => {
      sent = resolve
    })
    const server = await rawServer(async (req, res) => {
      req.resume()
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.write(streamed.slice(0, streamed.indexOf('event: content_block_start')))
      sent()
      await thought
      // The reasoning, redacted, comes whole: then the model writes its answer.
      const tool = streamed.indexOf('event: content_block_start', streamed.indexOf(DATA))
      res.write(streamed.slice(streamed.indexOf('event: content_block_start'), tool))
      await answered
      res.end(streamed.slice(tool))
    })
    servers.push({ close: async () => server.close() })
    const model = fakes.adapter(
      anthropic({ baseURL: server.baseURL.replace(/\/v1$/, ''), apiKey: 'sk', model: 'claude' }),
    )
    const records: AttemptRecord[] = []
    using deadline = Deadline.after(60_000, { clock })
    const call = callModel({
      models: [model],
      request: { messages: [user('Weather in Paris?')], maxTokens: 64, stream: true },
      deadline,
      firstTokenTimeoutMs: 10_000,
      limits: { admission: false },
      onAttempt: (r) => records.push(r),
    })
    const read = (async () => {
      const types: string[] = []
      for await (const event of call) types.push(event.type)
      return types
    })()
    await asked
    const armed = clock.pendingTimers
    clock.advance(200)
    think()
    // The first-token timer stops at the redacted block: the model is answering.
    await expect.poll(() => clock.pendingTimers, { interval: 1 }).toBeLessThan(armed)
    clock.advance(500)
    answer()
    expect(await read).toEqual(['signature', 'tool_call', 'tool_call', 'finish'])
    // Before: 700, the tool call's time (the timer had stopped at 200).
    expect(records.map((r) => [r.decision, r.firstTokenMs, r.latencyMs])).toEqual([
      ['success', 200, 700],
    ])
  })
  it('is held, not committed: an overload right after it falls back, as one before any token does', async () => {
    // Committed at the redacted block, the stream could not fall back: a
    // gateway's client got a 200 holding only "broke after the first token".
    const broken =
      streamed.slice(0, streamed.indexOf('event: content_block_start', streamed.indexOf(DATA))) +
      event('error', { error: { type: 'overloaded_error', message: 'Overloaded' } })
    const first = await faultServer(() => ({
      type: 'respond',
      headers: { 'content-type': 'text/event-stream' },
      body: broken,
    }))
    const second = await faultServer(() => ({
      type: 'respond',
      headers: { 'content-type': 'text/event-stream' },
      body: streamed,
    }))
    servers.push(first, second)
    const call = callModel({
      models: [
        fakes.adapter(anthropic({ baseURL: first.url, apiKey: 'sk', model: 'claude' })),
        fakes.adapter(anthropic({ baseURL: second.url, apiKey: 'sk', model: 'claude-b' })),
      ],
      request: { messages: [user('Weather in Paris?')], maxTokens: 64, stream: true },
      limits: { admission: false },
    })
    const types: string[] = []
    for await (const e of call) types.push(e.type)
    expect(types).toEqual(['signature', 'tool_call', 'tool_call', 'finish'])
    expect((await call.result).content.at(-1)).toMatchObject({ type: 'tool_call', name: 'weather' })
  })

  it('a rate limit right after it is reported as one before any token: its cooldown starts', async () => {
    // Reported answered at the held block, the permit settled ok and the
    // 429 after it started no cooldown: the next calls went into the limit.
    const body =
      streamed.slice(0, streamed.indexOf('event: content_block_start', streamed.indexOf(DATA))) +
      event('error', { error: { type: 'rate_limit_error', message: 'Rate limited' } })
    const server = await faultServer(() => ({
      type: 'respond',
      headers: { 'content-type': 'text/event-stream' },
      body,
    }))
    servers.push(server)
    const cooldowns: unknown[] = []
    const onCooldown = (message: unknown) => cooldowns.push(message)
    diagnostics.subscribe(llmChannels.cooldown.name, onCooldown)
    try {
      const call = callModel({
        models: [fakes.adapter(anthropic({ baseURL: server.url, apiKey: 'sk', model: 'claude' }))],
        request: { messages: [user('Weather in Paris?')], maxTokens: 64, stream: true },
        retry: { maxAttempts: 1 },
        limits: { admission: new Admission() },
      })
      const read = (async () => {
        for await (const _ of call) {
          // drained
        }
      })()
      await expect(read).rejects.toThrow()
      expect(cooldowns).toHaveLength(1)
    } finally {
      diagnostics.unsubscribe(llmChannels.cooldown.name, onCooldown)
    }
  })

  it('ends, with message_stop and no stop reason, as an answer whose finish the stream says', async () => {
    // Only the redacted reasoning, then message_stop (no message_delta): as
    // thinking in the clear would end, an answer of `unknown` finish.
    const body =
      streamed.slice(0, streamed.indexOf('event: content_block_start', streamed.indexOf(DATA))) +
      event('message_stop', {})
    const server = await faultServer(() => ({
      type: 'respond',
      headers: { 'content-type': 'text/event-stream' },
      body,
    }))
    servers.push(server)
    const model = fakes.adapter(anthropic({ baseURL: server.url, apiKey: 'sk', model: 'claude' }))
    const call = callModel({
      models: [model],
      request: { messages: [user('Weather in Paris?')], maxTokens: 64, stream: true },
      retry: { maxAttempts: 1 },
      limits: { admission: false },
    })
    const types: string[] = []
    for await (const e of call) types.push(e.type)
    // Before: the redacted block went out, then the stream ended with no finish event.
    expect(types).toEqual(['signature', 'finish'])
    expect(await call.result).toMatchObject({
      finishReason: 'unknown',
      content: [{ type: 'thinking', thinking: '', signature: DATA, redacted: true }],
    })
  })
})
