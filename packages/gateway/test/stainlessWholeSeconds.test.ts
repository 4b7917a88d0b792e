import { type FakeProvider, reply, startFakeProvider } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { type Harness, startHarness } from './support/harness.js'

/**
 * openai-node sends a per-request timeout as `X-Stainless-Timeout:
 * Math.trunc(timeout / 1000)`: `timeout: 1900` arrives as `1`. Read as
 * exactly 1000 ms, the gateway answered 504 `deadline_exceeded` at ~1 s to a
 * client that would have waited 1.9 s for an answer due at 1.2 s. A whole
 * number N is read as the most the client's timer can be (N + 1 s less 1 ms).
 */
describe('a per-request timeout that is not a whole number of seconds', () => {
  let provider: FakeProvider | undefined
  let harness: Harness | undefined
  afterEach(async () => {
    await harness?.close()
    await provider?.close()
    harness = undefined
    provider = undefined
  })

  for (const stream of [false, true]) {
    it(`timeout 1900, a provider answering at ~1.2 s${stream ? ', streamed' : ''}: answered, not a 504 at 1 s`, async () => {
      provider = await startFakeProvider({
        dialect: 'openai',
        reply: reply.text(
          'answered in time',
          stream ? { firstTokenDelayMs: 1200 } : { latencyMs: 1200 },
        ),
      })
      harness = await startHarness(
        {
          providers: { p: { dialect: 'openai', baseURL: provider.baseURL, apiKeys: ['k'] } },
          models: { m: { fallback: [{ provider: 'p', model: 'x' }] } },
        },
        { drainTimeoutMs: 0 },
      )
      const body = { model: 'm', messages: [{ role: 'user' as const, content: 'hi' }] }
      let text = ''
      if (stream) {
        const chunks = await harness.client.chat.completions.create(
          { ...body, stream: true },
          { timeout: 1900 },
        )
        for await (const chunk of chunks) text += chunk.choices[0]?.delta?.content ?? ''
      } else {
        const answer = await harness.client.chat.completions.create(body, { timeout: 1900 })
        text = answer.choices[0]?.message.content ?? ''
      }
      expect(text).toBe('answered in time')
      const line = harness.logs.find((l) => l.event === 'request')
      expect(line).toMatchObject({ status: 200 })
    })
  }
})
