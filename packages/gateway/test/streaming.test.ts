import { anthropicErrors, reply } from '@hourglass/testkit'
import { APIError } from 'openai'
import { afterEach, describe, expect, it } from 'vitest'
import { oneProviderGateway, readRaw } from './support/oneProviderGateway.js'

// Deadlines and breaks on a stream through the gateway: what these assert
// (a 504, a cut, a stop) comes at a time, so the file runs in the timing
// project. Characters split across writes: streamingUtf8.test.ts.
describe('SSE through the gateway', () => {
  const gw = oneProviderGateway()
  const one = gw.one
  afterEach(() => gw.close())

  it('a stream that breaks after its first token ends with one OpenAI error event, never restarted', async () => {
    const fake = await one('anthropic')
    fake.enqueue(
      anthropicErrors.overloadedInStream({ afterTokens: 3, text: 'one two three four five' }),
    )
    const stream = await gw.harness.client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
    })
    let text = ''
    const error = await (async () => {
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? ''
    })().catch((e: unknown) => e)
    expect(text).toBe('one two three')
    expect(error).toBeInstanceOf(APIError)
    expect(error).toMatchObject({ code: 'stream_interrupted', type: 'server_error' })
    expect(fake.requests).toHaveLength(1)
  })

  it('time running out before the answer gives 504 with x-deadline-expired in OpenAI error shape', async () => {
    const fake = await one('openai')
    fake.enqueue(reply.text('too late', { latencyMs: 5000 }))
    const started = performance.now()
    const res = await fetch(`${gw.harness.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-deadline-remaining-ms': '300' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
    })
    const elapsed = performance.now() - started
    expect(res.status).toBe(504)
    expect(res.headers.get('x-deadline-expired')).toBe('1')
    expect(res.headers.get('x-should-retry')).toBe('false')
    expect(await res.json()).toEqual({
      error: {
        message: 'the request ran out of time (deadline exceeded)',
        type: 'server_error',
        param: null,
        code: 'deadline_exceeded',
      },
    })
    // Not early: the budget less the ingress reserve (adaptive, at most 100 ms
    // on a loaded machine) and the gateway's reply reserve (25 ms).
    expect(elapsed).toBeGreaterThanOrEqual(300 - 100 - 25)
    expect(elapsed).toBeLessThan(2500)
    // The upstream saw the deadline it had left, and the call was abandoned with it.
    expect(Number(fake.requests[0]?.headers['x-deadline-remaining-ms'])).toBeLessThanOrEqual(300)
  })

  it('time running out mid-stream ends the stream with a deadline_exceeded error event', async () => {
    const fake = await one('openai')
    // 8 tokens, 100 ms apart (the first at once): the last would come 700 ms
    // in, well past the 300 ms budget.
    fake.enqueue(reply.text('a b c d e f g h', { tokenDelayMs: 100 }))
    const res = await fetch(`${gw.harness.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-deadline-remaining-ms': '300' },
      body: JSON.stringify({
        model: 'm',
        stream: true,
        messages: [{ role: 'user', content: 'hi' }],
      }),
    })
    expect(res.status).toBe(200)
    const { text } = await readRaw(res)
    const events = text.split('\n\n').filter((e) => e !== '')
    expect(events.length).toBeGreaterThan(1)
    expect(JSON.parse(events.at(-1)!.slice(6))).toMatchObject({
      error: { code: 'deadline_exceeded' },
    })
    expect(text).not.toContain('[DONE]')
  })

  it("a stream started within the SDK's own timeout (x-stainless-timeout) is read to its end past it, as the provider alone would be", async () => {
    // The SDK's timer stops at the response's headers: openai-node reads a
    // started stream as long as it runs. Through the gateway it was cut at
    // the timeout with a deadline_exceeded event, half the answer lost.
    const fake = await one('openai')
    // 8 tokens, 70 ms apart (the first at once): the last comes at 490 ms, well
    // past the 300 ms timeout; cut at the timeout, the stream would lose 3 or more.
    fake.enqueue(reply.text('a b c d e f g h', { tokenDelayMs: 70 }))
    const res = await fetch(`${gw.harness.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-stainless-timeout': '0.3' },
      body: JSON.stringify({
        model: 'm',
        stream: true,
        messages: [{ role: 'user', content: 'hi' }],
      }),
    })
    expect(res.status).toBe(200)
    const { text } = await readRaw(res)
    const content = text
      .split('\n\n')
      .filter((e) => e.startsWith('data: {'))
      .map((e) => JSON.parse(e.slice(6)) as { choices?: { delta?: { content?: string } }[] })
      .map((chunk) => chunk.choices?.[0]?.delta?.content ?? '')
      .join('')
    expect(text).not.toContain('"error"')
    expect(content).toBe('a b c d e f g h')
    expect(text).toContain('[DONE]')
    expect(fake.requests[0]?.outcome).toBe('success')
  })

  it('a client that stops reading mid-stream ends the upstream call too', async () => {
    const fake = await one('openai')
    fake.enqueue(
      reply.text('one two three four five six seven eight nine ten', { tokenDelayMs: 100 }),
    )
    const controller = new AbortController()
    const stream = await gw.harness.client.chat.completions.create(
      { model: 'm', messages: [{ role: 'user', content: 'hi' }], stream: true },
      { signal: controller.signal },
    )
    let chunks = 0
    for await (const _ of stream) {
      if (++chunks === 2) controller.abort()
    }
    await fake.waitForRequests(1)
    // The gateway hangs up on the provider instead of reading a generation nobody wants.
    await expect.poll(() => fake.requests[0]?.outcome, { timeout: 5000 }).toBe('client-closed')
    expect(fake.requests[0]?.tokensSent).toBeLessThan(10)
  })
})
