import type { FakeProvider, ProviderDialect } from '@hourglass/testkit'
import { reply } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

// One stream reader per wire format: OpenAI-compatible, Anthropic's, Gemini's.
const DIALECTS: ProviderDialect[] = ['openai', 'anthropic', 'gemini']

describe('an attempt ended because its client left is counted as that, not as a failure', () => {
  let fakes: FakeProvider[] = []
  let harness: Harness | undefined
  afterEach(async () => {
    await harness?.close()
    await Promise.all(fakes.map((f) => f.close()))
    fakes = []
    harness = undefined
  })

  async function gateway(dialect: ProviderDialect): Promise<FakeProvider> {
    const { fake, entry } = await fakeProvider(dialect, ['k-1'])
    fakes.push(fake)
    harness = await startHarness(
      { providers: { p: entry }, models: { m: fallback(['p', 'x']) } },
      // Every line, so the attempt's own shows what it was called.
      { logLevel: 'debug' },
    )
    return fake
  }

  async function outcomes(): Promise<string[]> {
    const page = await (await fetch(`${harness!.url}/metrics`)).text()
    return page
      .split('\n')
      .filter((line) => line.startsWith('hourglass_gateway_upstream_attempts_total{'))
  }

  it.each(DIALECTS)(
    '%s: a stream the client aborts midway (openai-node controller.abort())',
    async (dialect) => {
      const fake = await gateway(dialect)
      fake.enqueue(reply.text('one two three four five six seven eight', { tokenDelayMs: 40 }))
      const stream = await harness!.client.chat.completions.create({
        model: 'm',
        messages: [{ role: 'user', content: 'hi' }],
        stream: true,
      })
      let chunks = 0
      for await (const _ of stream) if (++chunks === 2) stream.controller.abort()
      await expect.poll(() => fake.requests[0]?.outcome).toBe('client-closed')
      await expect.poll(() => harness!.logs.filter((l) => l.event === 'request').length).toBe(1)
      expect(harness!.logs.find((l) => l.event === 'request')).toMatchObject({
        level: 'info',
        status: 499,
        error: 'client_closed',
      })
      expect(harness!.logs.filter((l) => l.level === 'warn')).toEqual([])
      expect(harness!.logs.filter((l) => l.event === 'attempt')).toMatchObject([
        { level: 'debug', provider: 'p', decision: 'client_closed' },
      ])
      expect(await outcomes()).toEqual([
        'hourglass_gateway_upstream_attempts_total{provider="p",outcome="client_closed"} 1',
      ])
    },
  )

  it('a whole answer the client stopped waiting for', async () => {
    const fake = await gateway('openai')
    fake.enqueue(reply.text('too late for anyone', { latencyMs: 3000 }))
    const controller = new AbortController()
    const call = harness!.client.chat.completions.create(
      { model: 'm', messages: [{ role: 'user', content: 'hi' }] },
      { signal: controller.signal },
    )
    await fake.waitForRequests(1)
    controller.abort()
    await expect(call).rejects.toThrow()
    await expect.poll(() => fake.requests[0]?.outcome).toBe('client-closed')
    await expect.poll(() => harness!.logs.filter((l) => l.event === 'request').length).toBe(1)
    expect(harness!.logs.filter((l) => l.level === 'warn')).toEqual([])
    expect(harness!.logs.filter((l) => l.event === 'attempt')).toMatchObject([
      { level: 'debug', provider: 'p', decision: 'client_closed' },
    ])
    expect(await outcomes()).toEqual([
      'hourglass_gateway_upstream_attempts_total{provider="p",outcome="client_closed"} 1',
    ])
  })
})
