import { type FakeProvider, startFakeProvider } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { startGateway } from '../src/index.js'

type StartedGateway = Awaited<ReturnType<typeof startGateway>>

const closers: Array<() => Promise<unknown>> = []
afterEach(async () => {
  while (closers.length > 0) await closers.pop()!()
})

const words = Array.from({ length: 40 }, (_, i) => `w${i} `).join('')

// The inner gateway ends the stream at the budget the outer sent it (less
// its reserves) with an error event coded `deadline_exceeded`; the outer read
// it as its provider's server_error and ended its own stream
// `stream_interrupted`, a provider failure in its log and metrics. Timed:
// the inner's frame arrives a few ms before the outer's own deadline would
// end the stream itself (the same answer, for the right reason) — on a
// loaded machine the order could turn, so it runs alone.
describe('a gateway behind a gateway: a stream the inner one ends at its deadline', () => {
  it('ends the outer stream deadline_exceeded, not stream_interrupted', async () => {
    const fake: FakeProvider = await startFakeProvider({ dialect: 'openai' })
    closers.push(() => fake.close())
    fake.setReply({ kind: 'text', text: words, tokenDelayMs: 100 })
    const inner: StartedGateway = await startGateway({
      config: {
        providers: { p: { dialect: 'openai', baseURL: fake.baseURL, apiKeys: ['k'] } },
        models: { m: { fallback: [{ provider: 'p', model: 'gpt' }] } },
      },
      port: 0,
      logger: () => {},
    })
    closers.push(() => inner.close())
    const outer: StartedGateway = await startGateway({
      config: {
        providers: { b: { dialect: 'openai', baseURL: `${inner.url}/v1`, apiKeys: ['k2'] } },
        models: { m: { fallback: [{ provider: 'b', model: 'm' }] } },
      },
      port: 0,
      logger: () => {},
    })
    closers.push(() => outer.close())
    const res = await fetch(`${outer.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-deadline-remaining-ms': '1000' },
      body: JSON.stringify({
        model: 'm',
        stream: true,
        messages: [{ role: 'user', content: 'x' }],
      }),
    })
    expect(res.status).toBe(200)
    const text = await res.text()
    const last = text.trim().split('\n\n').at(-1)!
    expect(JSON.parse(last.slice('data: '.length)).error.code).toBe('deadline_exceeded')
    expect(fake.requests).toHaveLength(1)
  })
})
