import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { ManualClock } from '@hourglass/core'
import OpenAI from 'openai'
import { afterEach, describe, expect, it } from 'vitest'
import { SSE_KEEP_ALIVE, STREAM_KEEP_ALIVE_MS } from '../../src/http/streamCompletion.js'
import { type Harness, startHarness } from '../support/harness.js'

/**
 * A provider that falls silent mid-answer (Anthropic buffering a large tool
 * argument, a model thinking without showing it) keeps its own stream alive
 * (Anthropic's `ping`, OpenAI's keep-alives); the gateway's stream to its
 * client must stay alive too, or a proxy in front of it (nginx's 60 s
 * `proxy_read_timeout`, an ALB's idle timeout) cuts an answer still coming.
 * The gateway runs on a ManualClock: the silence is the clock's, the upstream
 * is held by hand (an OpenAI-compatible server on loopback).
 */
const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
  `data: ${JSON.stringify({
    id: 'chatcmpl-up',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'up',
    choices: [{ index: 0, delta, finish_reason: finish }],
  })}\n\n`

let upstream: http.Server | undefined
let harness: Harness | undefined
afterEach(async () => {
  await harness?.close()
  upstream?.closeAllConnections()
  await new Promise((resolve) => upstream?.close(resolve))
  harness = undefined
  upstream = undefined
})

/** An upstream that sends its first token, then nothing until `resume()`. */
async function silentMidAnswer(clock: ManualClock) {
  let resume = () => {}
  const resumed = new Promise<void>((resolve) => {
    resume = resolve
  })
  upstream = http.createServer((req, res) => {
    req.resume()
    req.on('end', async () => {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.write(chunk({ role: 'assistant', content: 'one' }))
      await resumed
      res.write(chunk({ content: ' two' }))
      res.write(chunk({}, 'stop'))
      res.end('data: [DONE]\n\n')
    })
  })
  await new Promise<void>((resolve) => upstream?.listen(0, '127.0.0.1', resolve))
  const { port } = upstream.address() as AddressInfo
  harness = await startHarness(
    {
      providers: {
        p: { dialect: 'openai', baseURL: `http://127.0.0.1:${port}/v1`, apiKeys: ['k'] },
      },
      models: { m: { fallback: [{ provider: 'p', model: 'up' }] } },
    },
    { clock },
  )
  return { harness, resume }
}

describe('a stream whose provider falls silent after its first token', () => {
  it(`gets one ": keep-alive" comment per ${STREAM_KEEP_ALIVE_MS / 1000} s of silence, and the answer whole after`, async () => {
    const clock = new ManualClock()
    const { harness, resume } = await silentMidAnswer(clock)
    const res = await fetch(`${harness.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'm',
        messages: [{ role: 'user', content: 'hi' }],
        stream: true,
      }),
    })
    const reader = res.body!.getReader()
    const decoder = new TextDecoder()
    expect(decoder.decode((await reader.read()).value)).toContain('"content":"one"')
    // Two periods of silence (the timers fire within `advance`), then the rest of the answer.
    clock.advance(STREAM_KEEP_ALIVE_MS - 1)
    clock.advance(1)
    clock.advance(STREAM_KEEP_ALIVE_MS)
    resume()
    let rest = ''
    for (let read = await reader.read(); !read.done; read = await reader.read()) {
      rest += decoder.decode(read.value)
    }
    expect(rest.startsWith(`${SSE_KEEP_ALIVE}${SSE_KEEP_ALIVE}data: `)).toBe(true)
    expect(rest.split(SSE_KEEP_ALIVE)).toHaveLength(3)
    expect(rest).toContain('"content":" two"')
    expect(rest.endsWith('data: [DONE]\n\n')).toBe(true)
  })

  it("comes at half openai-python's read timeout when that is shorter: a silence the client would time out in is not silent", async () => {
    const clock = new ManualClock()
    const { harness, resume } = await silentMidAnswer(clock)
    const res = await fetch(`${harness.url}/v1/chat/completions`, {
      method: 'POST',
      // openai-python's `timeout=4`: its httpx gives up after 4 s without a byte.
      headers: { 'content-type': 'application/json', 'x-stainless-read-timeout': '4.0' },
      body: JSON.stringify({
        model: 'm',
        messages: [{ role: 'user', content: 'hi' }],
        stream: true,
      }),
    })
    const reader = res.body!.getReader()
    const decoder = new TextDecoder()
    expect(decoder.decode((await reader.read()).value)).toContain('"content":"one"')
    // Two seconds of silence, twice, then the rest of the answer.
    clock.advance(2000)
    clock.advance(2000)
    resume()
    let rest = ''
    for (let read = await reader.read(); !read.done; read = await reader.read()) {
      rest += decoder.decode(read.value)
    }
    expect(rest.startsWith(`${SSE_KEEP_ALIVE}${SSE_KEEP_ALIVE}data: `)).toBe(true)
    expect(rest).toContain('"content":" two"')
    expect(rest.endsWith('data: [DONE]\n\n')).toBe(true)
  })

  it('is read by the official client as if the silence had no comment in it', async () => {
    const clock = new ManualClock()
    const { harness, resume } = await silentMidAnswer(clock)
    // The bytes the client was given, beside what it read of them: the
    // comment has to be there for its skipping to be shown.
    let raw = ''
    const client = new OpenAI({
      baseURL: `${harness.url}/v1`,
      apiKey: 'x',
      maxRetries: 0,
      fetch: async (url, init) => {
        const res = await fetch(url, init)
        const [mine, theirs] = res.body!.tee()
        void (async () => {
          const decoder = new TextDecoder()
          for await (const chunk of mine) raw += decoder.decode(chunk, { stream: true })
        })()
        return new Response(theirs, res)
      },
    })
    const stream = client.chat.completions.stream({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
    })
    const chunks: string[] = []
    stream.on('content', (delta) => {
      chunks.push(delta)
      if (chunks.length !== 1) return
      clock.advance(STREAM_KEEP_ALIVE_MS)
      // The comment written, then the rest of the answer.
      setImmediate(resume)
    })
    const answer = await stream.finalChatCompletion()
    expect(chunks).toEqual(['one', ' two'])
    expect(answer.choices[0]?.message.content).toBe('one two')
    expect(answer.choices[0]?.finish_reason).toBe('stop')
    expect(raw.split(SSE_KEEP_ALIVE)).toHaveLength(2)
  })
})
