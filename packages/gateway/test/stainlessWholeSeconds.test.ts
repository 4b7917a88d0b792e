import { type Clock, ManualClock } from '@hourglass/core'
import { type FakeProvider, reply, startFakeProvider } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { type Harness, startHarness } from './support/harness.js'

/**
 * openai-node sends a per-request timeout as `X-Stainless-Timeout:
 * Math.trunc(timeout / 1000)`: `timeout: 1900` arrives as `1`. Read as
 * exactly 1000 ms, the gateway answered 504 `deadline_exceeded` at ~1 s to a
 * client that would have waited 1.9 s for an answer due at 1.2 s. A whole
 * number N is read as the most the client's timer can be (N + 1 s less 1 ms).
 *
 * Here the same at 9.9 s (sent as `9`), the answer due at 9.2 s: on a
 * ManualClock the gateway's deadline and the provider's answer share, moved
 * 9.2 s at once (the deadline read as 9000 ms fires first, a 504). The 1.9 s
 * and 1.2 s of real time left 0.7 s for everything else, which a loaded box
 * overran: the client's own timer fired first ("Request timed out", seen
 * with four workers and a busy loop on two cores). Now the client's real
 * 9.9 s timer only has to outlast a request's work, no wait in it.
 */
const TIMEOUT_MS = 9900
const ANSWER_AT_MS = 9200

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
    it(`timeout 9900, a provider answering at 9.2 s${stream ? ', streamed' : ''}: answered, not a 504 at 9 s`, async () => {
      const clock = new ManualClock()
      // The provider's wait for its answer, armed on the shared clock.
      let armed!: () => void
      const answerArmed = new Promise<void>((resolve) => {
        armed = resolve
      })
      const providerClock: Clock = {
        now: () => clock.now(),
        setTimeout: (callback, ms) => {
          if (ms === ANSWER_AT_MS) armed()
          return clock.setTimeout(callback, ms)
        },
        clearTimeout: (handle) => clock.clearTimeout(handle),
      }
      provider = await startFakeProvider({
        dialect: 'openai',
        clock: providerClock,
        reply: reply.text(
          'answered in time',
          stream ? { firstTokenDelayMs: ANSWER_AT_MS } : { latencyMs: ANSWER_AT_MS },
        ),
      })
      harness = await startHarness(
        {
          providers: { p: { dialect: 'openai', baseURL: provider.baseURL, apiKeys: ['k'] } },
          models: { m: { fallback: [{ provider: 'p', model: 'x' }] } },
        },
        { drainTimeoutMs: 0, clock },
      )
      const client = harness.client
      const body = { model: 'm', messages: [{ role: 'user' as const, content: 'hi' }] }
      const answered = (async () => {
        if (stream) {
          const chunks = await client.chat.completions.create(
            { ...body, stream: true },
            { timeout: TIMEOUT_MS },
          )
          let text = ''
          for await (const chunk of chunks) text += chunk.choices[0]?.delta?.content ?? ''
          return text
        }
        const answer = await client.chat.completions.create(body, { timeout: TIMEOUT_MS })
        return answer.choices[0]?.message.content ?? ''
      })()
      // The gateway's deadlines were set on its arrival, the provider's wait
      // is armed: both count from the clock's 0.
      await answerArmed
      clock.advance(ANSWER_AT_MS)
      expect(await answered).toBe('answered in time')
      const line = harness.logs.find((l) => l.event === 'request')
      expect(line).toMatchObject({ status: 200 })
    })
  }
})
