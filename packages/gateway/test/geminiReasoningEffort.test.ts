import { ManualClock } from '@hourglass/core'
import { type FakeProvider, reply, startFakeProvider } from '@hourglass/testkit'
import type OpenAI from 'openai'
import { afterEach, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'
import { type ReasoningMessage, readReasoning } from './support/reasoning.js'

/**
 * Gemini sends its thought summaries only to a request that sets
 * `generationConfig.thinkingConfig.includeThoughts: true`; the gateway never
 * asked, so a Gemini-backed model never answered `reasoning_content` against
 * the real API (and `reasoning_effort` was refused). `reasoning_effort` now
 * asks for them, translated as Google's OpenAI compatibility layer does: a
 * client of the official `openai` package gets the thinking as it gets
 * DeepSeek's.
 */

describe('reasoning_effort to a Gemini-backed model', () => {
  let fake: FakeProvider | undefined
  let harness: Harness | undefined
  afterEach(async () => {
    await harness?.close()
    await fake?.close()
    harness = undefined
    fake = undefined
  })

  async function start() {
    const started = await fakeProvider('gemini', ['AIza-k'])
    fake = started.fake
    harness = await startHarness({
      providers: { g: started.entry },
      models: { m: fallback(['g', 'gemini-2.5-flash']) },
    })
    return { fake: started.fake, client: harness.client }
  }
  const THOUGHT = 'weighing the options'

  it('returns reasoning_content, unstreamed and streamed', async () => {
    const { fake, client } = await start()
    fake.enqueue(
      reply.text('Pick B.', { thinking: THOUGHT }),
      reply.text('Pick B.', { thinking: THOUGHT }),
    )
    const whole = await client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'A or B?' }],
      reasoning_effort: 'low',
    })
    const message = whole.choices[0]!.message as ReasoningMessage
    expect(message.content).toBe('Pick B.')
    expect(message.reasoning_content).toBe(THOUGHT)
    expect(whole.usage?.completion_tokens_details?.reasoning_tokens).toBeGreaterThan(0)
    expect(fake.requests[0]!.body).toMatchObject({
      generationConfig: { thinkingConfig: { thinkingBudget: 1024, includeThoughts: true } },
    })

    const stream = await client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'A or B?' }],
      reasoning_effort: 'low',
      stream: true,
    })
    const { reasoning, content } = await readReasoning(stream)
    expect(reasoning).toBe(THOUGHT)
    expect(content).toBe('Pick B.')
  })

  it('without it, Gemini thinks but sends no thoughts: no reasoning_content', async () => {
    const { fake, client } = await start()
    fake.enqueue(reply.text('Pick B.', { thinking: THOUGHT }))
    const whole = await client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'A or B?' }],
    })
    const message = whole.choices[0]!.message as ReasoningMessage
    expect(message.content).toBe('Pick B.')
    expect(message.reasoning_content).toBeUndefined()
    // Billed all the same.
    expect(whole.usage?.completion_tokens_details?.reasoning_tokens).toBeGreaterThan(0)
    expect(JSON.stringify(fake.requests[0]!.body)).not.toContain('thinkingConfig')
  })

  it('a value Google defines no thinking for is a 400 naming the field, nothing sent', async () => {
    const { fake, client } = await start()
    const refused = await client.chat.completions
      .create({
        model: 'm',
        messages: [{ role: 'user', content: 'A or B?' }],
        reasoning_effort: 'xhigh' as OpenAI.ReasoningEffort,
      })
      .catch((error: unknown) => error)
    expect(refused).toMatchObject({
      status: 400,
      code: 'unsupported_field',
      param: 'reasoning_effort',
    })
    expect((refused as Error).message).toContain('none, minimal, low, medium or high')
    expect(fake.requests).toHaveLength(0)
  })
})

/**
 * The README's Limits: a stream's headers go out with its first token. A
 * Gemini model thinking without being asked to show it sends nothing while
 * it thinks (the client's `timeout` covers the whole thinking); asked, its
 * first thought starts the stream. The fake's tokens are paced on a
 * ManualClock: the headers are placed by how many tokens it had sent.
 */
describe('a Gemini stream that thinks before its answer', () => {
  let fake: FakeProvider | undefined
  let harness: Harness | undefined
  afterEach(async () => {
    await harness?.close()
    await fake?.close()
    harness = undefined
    fake = undefined
  })

  async function tokensBeforeHeaders(fields: Record<string, unknown>): Promise<number> {
    const clock = new ManualClock()
    const upstream = await startFakeProvider({ dialect: 'gemini', clock })
    fake = upstream
    upstream.setReply(reply.text('the answer', { thinking: 'a b c d e f', tokenDelayMs: 1000 }))
    harness = await startHarness({
      providers: { g: { dialect: 'gemini', baseURL: upstream.baseURL, apiKeys: ['k'] } },
      models: { m: fallback(['g', 'gemini-2.5-flash']) },
    })
    const body = { model: 'm', messages: [{ role: 'user', content: 'hi' }], stream: true }
    let sentAtHeaders: number | undefined
    const headers = fetch(`${harness.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...body, ...fields }),
    }).then((res) => {
      sentAtHeaders = upstream.requests[0]?.tokensSent
      return res
    })
    await upstream.waitForRequests(1)
    while (sentAtHeaders === undefined && upstream.requests[0]?.outcome === 'pending') {
      // The next token's timer is on the clock (or the headers came meanwhile).
      await expect.poll(() => sentAtHeaders !== undefined || clock.pendingTimers === 1).toBe(true)
      if (sentAtHeaders === undefined) clock.advance(1000)
    }
    const res = await headers
    const reading = res.text()
    while (upstream.requests[0]?.outcome === 'pending') {
      await expect
        .poll(() => upstream.requests[0]?.outcome !== 'pending' || clock.pendingTimers === 1)
        .toBe(true)
      clock.advance(1000)
    }
    expect(await reading).toContain('data: [DONE]')
    return sentAtHeaders ?? Number.NaN
  }

  it('starts with its first thought when reasoning_effort asks for them, else after the thinking', async () => {
    // At most the six thoughts (the headers came with the thinking; held
    // for the answer they come after its first token, 7 or more), not "at
    // most 1": the loop above moves the clock again as soon as the next
    // token's timer is armed, which can be before the headers the first
    // thought sent have reached this client (a loaded run read 2).
    expect(await tokensBeforeHeaders({ reasoning_effort: 'low' })).toBeLessThanOrEqual(6)
    await harness?.close()
    await fake?.close()
    // Six thought tokens, none sent: the headers wait for the answer's first.
    expect(await tokensBeforeHeaders({})).toBeGreaterThan(6)
  })
})
