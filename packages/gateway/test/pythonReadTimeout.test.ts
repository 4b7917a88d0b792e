import { once } from 'node:events'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { ManualClock } from '@hourglass/core'
import { type FakeProvider, reply } from '@hourglass/testkit'
import OpenAI from 'openai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { clientTimeouts } from '../src/http/clientHeaders.js'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

/**
 * openai-python (and LangChain's `ChatOpenAI(timeout=…)` over it) sends its
 * timeout as `X-Stainless-Read-Timeout` — exact seconds as Python prints
 * them (`600.0`, `2.0`), on every request — never openai-node's
 * `X-Stainless-Timeout`. Unread, a Python client's timeout was unknown to
 * the gateway: a wait before sending (an RPM window, a cooldown) was taken
 * past it, the client timed out with nothing and sent the request again
 * (its SDK retries a timeout twice), never told when to come back.
 */
describe("openai-python's X-Stainless-Read-Timeout", () => {
  let fake: FakeProvider
  let h: Harness
  beforeAll(async () => {
    const p = await fakeProvider('openai', ['sk-python-read-timeout'], { limits: { rpm: 1 } })
    fake = p.fake
    fake.setReply(reply.text('ok'))
    h = await startHarness({
      providers: { p: p.entry },
      models: { m: fallback(['p', 'model-p']) },
      policy: { maxAttempts: 1 },
      // A window that always fits the ingress deadline (60 s): only the client's timeout can refuse its wait.
      limits: { windowMs: 10_000 },
    })
  })
  afterAll(async () => {
    await h?.close()
    await fake?.close()
  })

  /** What a request carrying openai-python's header of `timeout=2` got: its error, or none. */
  async function asPython(stream: boolean): Promise<unknown> {
    const headers = { 'x-stainless-read-timeout': '2.0' }
    const body = { model: 'm', messages: [{ role: 'user' as const, content: 'x' }] }
    try {
      if (!stream) {
        await h.client.chat.completions.create(body, { headers })
        return undefined
      }
      const chunks = await h.client.chat.completions.create({ ...body, stream: true }, { headers })
      for await (const _ of chunks) {
        // read to the end
      }
      return undefined
    } catch (error) {
      return error
    }
  }

  it('a wait that does not fit it is refused at once, 429 with Retry-After, whole or streamed; nothing sent', async () => {
    await h.client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'x' }],
    })
    for (const stream of [false, true]) {
      const error = await asPython(stream)
      expect(error, `stream: ${stream}`).toBeInstanceOf(OpenAI.RateLimitError)
      const seconds = Number(
        (error as InstanceType<typeof OpenAI.APIError>).headers?.get('retry-after'),
      )
      expect(seconds).toBeGreaterThan(2)
    }
    expect(fake.requests).toHaveLength(1)
  })

  it('is read as exact seconds (not truncated, as the node header is), each clamped', () => {
    const maxMs = 300_000
    const read = (headers: Record<string, string>) => clientTimeouts(headers, maxMs)
    const python = (value: string) => read({ 'x-stainless-read-timeout': value }).afterBodyMs
    expect(python('2.0')).toBe(2000)
    expect(python('20')).toBe(20_000)
    expect(python('1.5')).toBe(1500)
    // openai-python's default, 600 s: no more than the gateway's own cap.
    expect(python('600.0')).toBe(maxMs)
    // openai-node's whole `1` may be up to 1999 ms, from the head; the Python one says 1500, from the body's end.
    expect(read({ 'x-stainless-timeout': '1', 'x-stainless-read-timeout': '1.5' })).toEqual({
      fromHeadMs: 1999,
      afterBodyMs: 1500,
    })
    expect(read({ 'x-stainless-read-timeout': '2.0' }).fromHeadMs).toBeUndefined()
    for (const value of ['0', '0.0', '1e-05', 'inf', '-1', '', 'abc', '1.5, 2.0']) {
      expect(python(value), value).toBeUndefined()
    }
  })
})

/**
 * httpx sends the request (headers and body) under its write timeout and
 * starts the read timeout only once the body is out: openai-python's
 * `timeout=2` is 2 s from the end of its upload, not from its first byte.
 * Counted from the head, a 30 KB body uploaded over 1.5 s with the provider
 * answering 0.8 s after it got the gateway's 504 0.5 s after the upload,
 * where the client would have waited for its answer. The gateway runs on a
 * ManualClock: the upload's time and the provider's are the clock's; the
 * provider (an OpenAI-compatible server on loopback) answers when told.
 */
describe("openai-python's read timeout, counted from the end of its upload", () => {
  const clock = new ManualClock()
  let upstream: http.Server | undefined
  let h: Harness | undefined
  /** The provider's `answer` for the request that reached it whole, one request at a time. */
  let reached: (answer: () => void) => void = () => {}
  beforeAll(async () => {
    upstream = http.createServer((req, res) => {
      req.resume()
      req.on('end', () =>
        reached(() => {
          res.writeHead(200, { 'content-type': 'application/json' })
          res.end(
            JSON.stringify({
              id: 'chatcmpl-up',
              object: 'chat.completion',
              created: 1,
              model: 'up',
              choices: [
                { index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' },
              ],
              usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
            }),
          )
        }),
      )
    })
    await new Promise<void>((resolve) => upstream?.listen(0, '127.0.0.1', resolve))
    const { port } = upstream.address() as AddressInfo
    h = await startHarness(
      {
        providers: {
          p: { dialect: 'openai', baseURL: `http://127.0.0.1:${port}/v1`, apiKeys: ['k'] },
        },
        models: { m: fallback(['p', 'up']) },
        policy: { maxAttempts: 1 },
      },
      { clock },
    )
  })
  afterAll(async () => {
    await h?.close()
    upstream?.closeAllConnections()
    await new Promise((resolve) => upstream?.close(resolve))
  })

  /**
   * openai-python's `timeout=2` on a 30 KB body whose upload takes
   * `uploadMs`, then a provider answering `answerMs` after the body reached
   * it: the status the client got. The head first (`Expect: 100-continue`:
   * the body is asked for once the gateway has taken the head), the body in
   * two parts `uploadMs` apart.
   */
  async function slowUpload(
    uploadMs: number,
    answerMs: number,
    headers: Record<string, string> = {},
  ): Promise<number> {
    const body = JSON.stringify({
      model: 'm',
      messages: [{ role: 'user', content: 'x'.repeat(30_000) }],
    })
    const req = http.request(`${h?.url}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
        'x-stainless-read-timeout': '2.0',
        expect: '100-continue',
        ...headers,
      },
    })
    const response = once(req, 'response') as Promise<[http.IncomingMessage]>
    const atProvider = new Promise<() => void>((resolve) => {
      reached = resolve
    })
    req.flushHeaders()
    await once(req, 'continue')
    req.write(body.slice(0, 15_000))
    clock.advance(uploadMs)
    req.end(body.slice(15_000))
    const answer = await atProvider
    clock.advance(answerMs)
    answer()
    const [res] = await response
    res.resume()
    await once(res, 'end')
    return res.statusCode ?? 0
  }

  it('a provider answering 0.8 s after a 1.5 s upload is answered (not a 504 at 2 s from the head)', async () => {
    expect(await slowUpload(1500, 800)).toBe(200)
  })

  it('still bounds the wait after the upload: a provider answering 2 s after it is a 504', async () => {
    expect(await slowUpload(1500, 2000)).toBe(504)
  })

  it("openai-node's X-Stainless-Timeout beside it still counts from the head, the sooner end winning", async () => {
    // `1` from the head is at most 1999 ms: over by 2300 ms, whatever the read timeout says.
    expect(await slowUpload(1500, 800, { 'x-stainless-timeout': '1' })).toBe(504)
  })
})
