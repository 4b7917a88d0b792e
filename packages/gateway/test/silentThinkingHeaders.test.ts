import { ManualClock } from '@hourglass/core'
import {
  type FakeProvider,
  type ProviderDialect,
  reply,
  startFakeProvider,
} from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { type Harness, startHarness } from './support/harness.js'

/**
 * What the README's Limits say of a model that thinks before its first token:
 * a stream's headers go out with its first token, so the SDKs' `timeout`
 * (which runs until the headers) covers a silent thinking through the
 * gateway, where api.openai.com would have sent its headers at once. The
 * `openai` dialect streams nothing but its role chunk while the model thinks
 * (as OpenAI's Chat Completions does); DeepSeek streams the thinking as
 * `reasoning_content`, which starts the stream. The fake's tokens, thinking
 * included, are paced on a ManualClock: the headers are placed by how many
 * tokens the fake had sent when they arrived, not by a timer.
 */
const THINKING = 'a b c d e f'
const THINKING_TOKENS = 6

let fake: FakeProvider | undefined
let harness: Harness | undefined
afterEach(async () => {
  await harness?.close()
  await fake?.close()
  harness = undefined
  fake = undefined
})

/** Tokens the fake had sent when the gateway's stream headers reached the client. */
async function tokensBeforeHeaders(dialect: ProviderDialect): Promise<number> {
  const clock = new ManualClock()
  fake = await startFakeProvider({ dialect, clock })
  fake.setReply(reply.text('the answer', { thinking: THINKING, tokenDelayMs: 1000 }))
  harness = await startHarness({
    providers: { p: { dialect, baseURL: fake.baseURL, apiKeys: ['k'] } },
    models: { m: { fallback: [{ provider: 'p', model: 'reasoner' }] } },
  })
  const upstream = fake
  const response = fetch(`${harness.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }], stream: true }),
  })
  let sentAtHeaders: number | undefined
  const headers = response.then((res) => {
    sentAtHeaders = upstream.requests[0]?.tokensSent
    return res
  })
  await upstream.waitForRequests(1)
  const total = THINKING_TOKENS + 2
  for (let sent = 1; sent <= total && sentAtHeaders === undefined; sent++) {
    // The next token's timer is on the clock (or the headers came meanwhile).
    await expect.poll(() => sentAtHeaders !== undefined || clock.pendingTimers === 1).toBe(true)
    if (sentAtHeaders !== undefined) break
    clock.advance(1000)
    await expect.poll(() => upstream.requests[0]?.tokensSent).toBe(sent)
  }
  const res = await headers
  expect(res.status).toBe(200)
  expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/)
  // Read to the end, the rest of the answer paced out.
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

describe('a stream whose model thinks before its first token', () => {
  it('openai dialect: the headers wait for the first answer token, through the silent thinking', async () => {
    expect(await tokensBeforeHeaders('openai')).toBeGreaterThan(THINKING_TOKENS)
  })

  it('deepseek dialect: the streamed thinking starts the stream, headers with its first piece', async () => {
    expect(await tokensBeforeHeaders('deepseek')).toBeLessThan(THINKING_TOKENS)
  })
})
