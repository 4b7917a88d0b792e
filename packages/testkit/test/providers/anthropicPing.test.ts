import { ManualClock } from '@hourglass/core'
import { afterEach, expect, it } from 'vitest'
import { type FakeProvider, reply, startFakeProvider } from '../../src/providers/index.js'
import { readSse } from './sse.js'

/**
 * Anthropic keeps a quiet stream alive with `ping` events ("Event streams
 * may also include any number of ping events"), not SSE comments. The fake
 * sent `: keep-alive` comments on every route, so a client that mishandled
 * a ping in the middle of an answer passed against it.
 */
let fake: FakeProvider | undefined
afterEach(async () => {
  await fake?.close()
  fake = undefined
})

const messages = (f: FakeProvider, route = '/v1/messages') =>
  fetch(`${f.url}${route}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({
      model: 'claude-sonnet-4-5',
      max_tokens: 64,
      stream: true,
      messages: [{ role: 'user', content: 'hi' }],
    }),
  })

it('keeps a stream waiting for its first token alive with ping events, never comments', async () => {
  fake = await startFakeProvider({
    dialect: 'anthropic',
    reply: reply.text('Hi.', { firstTokenDelayMs: 100, keepAliveEveryMs: 20 }),
  })
  const sse = await readSse(await messages(fake))
  expect(sse.comments).toEqual([])
  const names = sse.events.map((e) => e.event)
  // The stream's own ping (after the first block opens), then the
  // keep-alives before the first delta.
  const firstDelta = names.indexOf('content_block_delta')
  const waiting = names.slice(names.indexOf('content_block_start') + 1, firstDelta)
  expect(waiting.length).toBeGreaterThan(0)
  expect(new Set(waiting)).toEqual(new Set(['ping']))
  for (const e of sse.events.filter((e) => e.event === 'ping'))
    expect(JSON.parse(e.data)).toEqual({ type: 'ping' })
  expect(names.at(-1)).toBe('message_stop')
})

it('a hang after the headers opens with message_start, then pings; the OpenAI route keeps its comments', async () => {
  fake = await startFakeProvider({
    dialect: 'anthropic',
    reply: reply.hang({ afterHeaders: true, keepAliveEveryMs: 10 }),
  })
  const res = await messages(fake)
  const reader = res.body!.getReader()
  let text = ''
  const ping = 'event: ping\ndata: {"type": "ping"}\n\n'
  while (!text.includes(ping)) text += new TextDecoder().decode((await reader.read()).value)
  await reader.cancel()
  // A stream stalled before its first token has sent `message_start`, with
  // the message's id and input counts, as every Anthropic stream opens.
  const [first, ...rest] = text.split('\n\n')
  expect(first?.startsWith('event: message_start\ndata: ')).toBe(true)
  const start = JSON.parse(first!.slice(first!.indexOf('data: ') + 6))
  expect(start).toMatchObject({
    type: 'message_start',
    message: {
      id: expect.stringMatching(/^msg_/),
      model: 'claude-sonnet-4-5',
      content: [],
      stop_reason: null,
      usage: { input_tokens: expect.any(Number), output_tokens: 1 },
    },
  })
  expect(start.message.usage.input_tokens).toBeGreaterThan(0)
  expect(res.headers.get('request-id')).toBe(`req_${start.message.id}`)
  expect(`${rest[0]}\n\n`).toBe(ping)
  expect(fake.requests[0]?.outcome).toBe('hang')
  fake.setReply(reply.text('x', { firstTokenDelayMs: 60, keepAliveEveryMs: 20 }))
  const openai = await readSse(
    await fetch(`${fake.url}/v1/chat/completions`, {
      method: 'POST',
      body: JSON.stringify({ model: 'm', stream: true, messages: [] }),
    }),
  )
  expect(openai.comments.length).toBeGreaterThan(0)
  expect(openai.events.some((e) => e.event === 'ping')).toBe(false)
})

// A request that does not stream gets a whole answer's headers and no
// stream events: no message_start or pings (Anthropic), no `: keep-alive`
// comments (OpenAI, Gemini's JSON-array form), which a JSON reader meets as
// a parse error instead of a stall.
it.each([
  ['anthropic', '/v1/messages'],
  ['openai', '/v1/chat/completions'],
  ['gemini', '/v1beta/models/gemini-2.5-flash:streamGenerateContent'],
] as const)(
  'a hang after the headers of a %s request that does not stream sends nothing',
  async (dialect, route) => {
    const clock = new ManualClock()
    fake = await startFakeProvider({
      dialect,
      clock,
      reply: reply.hang({ afterHeaders: true, keepAliveEveryMs: 5 }),
    })
    const res = await fetch(`${fake.url}${route}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify(
        dialect === 'gemini'
          ? { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }
          : { model: 'm', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] },
      ),
    })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('application/json')
    const reader = res.body!.getReader()
    const read = (async () => {
      let bytes = 0
      try {
        for (let r = await reader.read(); !r.done; r = await reader.read()) bytes += r.value.length
      } catch {
        // The fake's close cuts the hanging answer: what arrived before is the figure.
      }
      return bytes
    })()
    // Past three keep-alives' time on the fake's clock, each advance given a turn to write.
    for (let i = 0; i < 3; i++) {
      clock.advance(5)
      await new Promise((resolve) => setImmediate(resolve))
    }
    await fake.close()
    fake = undefined
    expect(await read).toBe(0)
  },
)

// DeepSeek keeps a whole answer it is still generating alive with empty
// lines ("Non-streaming requests: Continuously return empty lines"): its
// stalled answer sends them, as its slow text reply does.
it('a hang after the headers of a DeepSeek request that does not stream sends empty lines, as DeepSeek does', async () => {
  const clock = new ManualClock()
  fake = await startFakeProvider({
    dialect: 'deepseek',
    clock,
    reply: reply.hang({ afterHeaders: true, keepAliveEveryMs: 5 }),
  })
  const res = await fetch(`${fake.url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'deepseek-chat', messages: [{ role: 'user', content: 'hi' }] }),
  })
  expect(res.headers.get('content-type')).toBe('application/json')
  const reader = res.body!.getReader()
  await expect.poll(() => clock.pendingTimers).toBe(1)
  clock.advance(5)
  expect(new TextDecoder().decode((await reader.read()).value)).toBe('\n')
  await reader.cancel()
})
