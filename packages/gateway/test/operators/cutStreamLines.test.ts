import { type FakeProvider, reply } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import type { LogRecord } from '../../src/index.js'
import { fakeProvider, fallback, type Harness, startHarness } from '../support/harness.js'

/**
 * A stream that breaks after its 200 is a failure the client sees as an
 * error event: its request line is `warn`, whatever broke it (the provider,
 * the drain), as the same failure answered before the headers (502, 503)
 * is. And an attempt cut mid-stream says what it cost only when the
 * gateway prices attempts (under a cost budget): never a `costUsd: 0` for
 * tokens that were generated and billed.
 */
describe('the log lines of a stream cut after its first event', () => {
  let fake: FakeProvider | undefined
  let harness: Harness | undefined
  afterEach(async () => {
    await harness?.close()
    await fake?.close()
    harness = undefined
    fake = undefined
  })

  const prices = { 'model-x': { inputPerMTok: 1000, outputPerMTok: 1000 } }
  const words = Array.from({ length: 40 }, (_, i) => ` w${i}`).join('')

  async function start(policy?: Record<string, unknown>) {
    const p = await fakeProvider('openai', ['sk-cut-lines-0001'], { prices })
    fake = p.fake
    harness = await startHarness(
      {
        providers: { p: p.entry },
        models: { m: fallback(['p', 'model-x']) },
        ...(policy === undefined ? {} : { policy }),
      },
      { drainTimeoutMs: 0 },
    )
    return { fake: p.fake, harness }
  }

  /** Opens a stream and resolves once its first bytes arrived, with a reader of the rest. */
  async function openStream(h: Harness) {
    const res = await fetch(`${h.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'm',
        messages: [{ role: 'user', content: 'hi' }],
        max_tokens: 100,
        stream: true,
      }),
    })
    expect(res.status).toBe(200)
    const reader = (res.body as ReadableStream<Uint8Array>).getReader()
    await reader.read()
    const decoder = new TextDecoder()
    return async () => {
      let text = ''
      for (;;) {
        const { done, value } = await reader.read()
        if (done) return text
        text += decoder.decode(value, { stream: true })
      }
    }
  }

  const requestLine = (logs: LogRecord[]) => logs.find((l) => l.event === 'request')
  const interrupted = (logs: LogRecord[]) => logs.filter((l) => l.event === 'stream-interrupted')

  it('cut by the drain: the request line is warn (200, shutting_down), as a stream the provider cut', async () => {
    const { fake, harness: h } = await start()
    fake.enqueue(reply.text(words, { tokenDelayMs: 50 }))
    const rest = await openStream(h)
    const report = await h.running.close()
    expect(report.cutOff).toBe(1)
    expect(await rest()).toContain('"code":"shutting_down"')
    expect(requestLine(h.logs)).toMatchObject({
      level: 'warn',
      status: 200,
      error: 'shutting_down',
    })
    expect(interrupted(h.logs)).toMatchObject([{ level: 'warn', error: 'shutting_down' }])
  })

  it('cut by the provider: the request line is warn (200, stream_interrupted)', async () => {
    const { fake, harness: h } = await start()
    fake.enqueue(reply.text(words, { cutAfterTokens: 2 }))
    const rest = await openStream(h)
    expect(await rest()).toContain('"code":"stream_interrupted"')
    await expect.poll(() => requestLine(h.logs)).toBeDefined()
    expect(requestLine(h.logs)).toMatchObject({
      level: 'warn',
      status: 200,
      error: 'stream_interrupted',
    })
    expect(interrupted(h.logs)).toMatchObject([{ level: 'warn', error: 'stream_interrupted' }])
  })

  it('without a cost budget, the attempt cut mid-stream has no costUsd (not 0)', async () => {
    const { fake, harness: h } = await start()
    fake.enqueue(reply.text(words, { cutAfterTokens: 2 }))
    await (await openStream(h))()
    await expect.poll(() => requestLine(h.logs)).toBeDefined()
    const attempt = h.logs.find((l) => l.event === 'attempt')
    expect(attempt).toMatchObject({ decision: 'fail', errorClass: 'StreamInterruptedError' })
    expect(attempt).not.toHaveProperty('costUsd')
    expect(requestLine(h.logs)).not.toHaveProperty('costUsd')
  })

  it('under a cost budget, the attempt cut by the drain carries the cost of what was generated', async () => {
    const { fake, harness: h } = await start({ maxCostUsdPerRequest: 5 })
    fake.enqueue(reply.text(words, { tokenDelayMs: 50 }))
    const rest = await openStream(h)
    await h.running.close()
    await rest()
    const attempt = h.logs.find((l) => l.event === 'attempt')
    expect(attempt?.['costUsd']).toBeGreaterThan(0)
    expect(requestLine(h.logs)?.['costUsd']).toBe(attempt?.['costUsd'])
  })
})
