import { type FakeProvider, reply } from '@hourglass/testkit'
import OpenAI from 'openai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { clientTimeoutMs } from '../src/http/clientHeaders.js'
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

  it('is read as exact seconds (not truncated, as the node header is), the smaller of the two, clamped', () => {
    const maxMs = 300_000
    const read = (headers: Record<string, string>) => clientTimeoutMs(headers, maxMs)
    expect(read({ 'x-stainless-read-timeout': '2.0' })).toBe(2000)
    expect(read({ 'x-stainless-read-timeout': '20' })).toBe(20_000)
    expect(read({ 'x-stainless-read-timeout': '1.5' })).toBe(1500)
    // openai-python's default, 600 s: no more than the gateway's own cap.
    expect(read({ 'x-stainless-read-timeout': '600.0' })).toBe(maxMs)
    // openai-node's whole `1` may be up to 1999 ms; the Python one says 1500.
    expect(read({ 'x-stainless-timeout': '1', 'x-stainless-read-timeout': '1.5' })).toBe(1500)
    expect(read({ 'x-stainless-timeout': '1', 'x-stainless-read-timeout': '5.0' })).toBe(1999)
    for (const value of ['0', '0.0', '1e-05', 'inf', '-1', '', 'abc', '1.5, 2.0']) {
      expect(read({ 'x-stainless-read-timeout': value }), value).toBeUndefined()
    }
  })
})
