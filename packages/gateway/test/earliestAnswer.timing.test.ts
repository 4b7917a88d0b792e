import { anthropicErrors, type FakeProvider, reply } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

describe('the earliest answer wins, through the gateway', () => {
  let fakes: FakeProvider[] = []
  let harness: Harness | undefined
  afterEach(async () => {
    await harness?.close()
    await Promise.all(fakes.map((f) => f.close()))
    fakes = []
    harness = undefined
  })

  async function overloadedThenHealthy() {
    const claude = await fakeProvider('anthropic', ['sk-ant-1'])
    const openai = await fakeProvider('openai', ['sk-oai-1'])
    fakes.push(claude.fake, openai.fake)
    claude.fake.setReply(anthropicErrors.overloaded())
    openai.fake.setReply(reply.text('from the healthy model'))
    harness = await startHarness(
      {
        providers: { claude: claude.entry, openai: openai.entry },
        models: { chat: fallback(['claude', 'claude-opus-4-6'], ['openai', 'gpt-4o-mini']) },
      },
      // Every attempt's line, the answering one's too (debug).
      { logLevel: 'debug' },
    )
    return { claude: claude.fake, openai: openai.fake }
  }

  for (const budget of [{ ms: 15_000 }, { ms: undefined }]) {
    const label = budget.ms === undefined ? 'the default 60 s' : `${budget.ms / 1000} s`
    it(`a 529 overloaded_error with a healthy fallback answers from the fallback in < 1.5 s (${label} budget)`, async () => {
      const { claude, openai } = await overloadedThenHealthy()
      const started = performance.now()
      const completion = await harness!.client.chat.completions.create(
        { model: 'chat', messages: [{ role: 'user', content: 'hi' }] },
        budget.ms === undefined
          ? {}
          : { headers: { 'x-deadline-remaining-ms': String(budget.ms) } },
      )
      const elapsedMs = performance.now() - started
      expect(completion.choices[0]?.message.content).toBe('from the healthy model')
      expect(elapsedMs).toBeLessThan(1500)
      expect(claude.requests).toHaveLength(1)
      expect(openai.requests).toHaveLength(1)
      const attempts = harness!.logs.filter((l) => l.event === 'attempt')
      expect(attempts.map((l) => [l['provider'], l['decision']])).toEqual([
        ['claude', 'fallback'],
        ['openai', 'success'],
      ])
      expect(String(attempts[0]?.['reason'])).toMatch(/is expected to answer before this model/)
    })
  }

  it('streams take the same path: the first chunk comes from the fallback in < 1.5 s', async () => {
    const { claude } = await overloadedThenHealthy()
    const started = performance.now()
    const stream = await harness!.client.chat.completions.create(
      { model: 'chat', messages: [{ role: 'user', content: 'hi' }], stream: true },
      { headers: { 'x-deadline-remaining-ms': '15000' } },
    )
    let text = ''
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? ''
    expect(text).toBe('from the healthy model')
    expect(performance.now() - started).toBeLessThan(1500)
    expect(claude.requests).toHaveLength(1)
  })
})
