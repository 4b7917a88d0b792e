import { reply } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

// A provider that takes the connection and never answers: with the config's
// per-attempt limits it is left for the fallback, well inside the request's
// deadline. Before, only the deadline ended the wait (a 504, the fallback never asked).
describe('a hung provider is left for the fallback', () => {
  let harness: Harness | undefined
  const fakes: Array<{ close(): Promise<void> }> = []
  afterEach(async () => {
    await harness?.close()
    harness = undefined
    await Promise.all(fakes.splice(0).map((f) => f.close()))
  })

  async function start(hungExtra: Record<string, unknown>, policy: Record<string, unknown> = {}) {
    const hung = await fakeProvider('anthropic', ['k-hung'], hungExtra)
    const backup = await fakeProvider('openai', ['k-backup'])
    fakes.push(hung.fake, backup.fake)
    hung.fake.setReply(reply.hang())
    backup.fake.setReply(reply.text('from the fallback'))
    harness = await startHarness({
      providers: { hung: hung.entry, backup: backup.entry },
      models: { m: fallback(['hung', 'claude-x'], ['backup', 'gpt-x']) },
      deadline: { defaultMs: 60_000 },
      policy,
    })
    return { hung: hung.fake, backup: backup.fake, harness }
  }

  it('non-streamed: after the provider headersTimeoutMs', async () => {
    const { hung, backup, harness } = await start({ headersTimeoutMs: 300 })
    const answer = await harness.client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
    })
    expect(answer.choices[0]?.message.content).toBe('from the fallback')
    expect(hung.requests).toHaveLength(1)
    expect(backup.requests).toHaveLength(1)
    const attempt = harness.logs.find((l) => l.event === 'attempt' && l['provider'] === 'hung')
    expect(attempt).toMatchObject({ errorKind: 'timeout' })
  })

  it('streamed: after the provider headersTimeoutMs', async () => {
    const { hung, backup, harness } = await start({ headersTimeoutMs: 300 })
    const stream = await harness.client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
    })
    let text = ''
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? ''
    expect(text).toBe('from the fallback')
    expect(hung.requests).toHaveLength(1)
    expect(backup.requests).toHaveLength(1)
  })

  it('streamed: after policy.firstTokenTimeoutMs from the config', async () => {
    // The limit applies to the backup's attempt too, on the wall clock: 2 s,
    // not 300 ms, so a loaded machine cannot make its first token late.
    const { hung, backup, harness } = await start({}, { firstTokenTimeoutMs: 2000 })
    const stream = await harness.client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
    })
    let text = ''
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? ''
    expect(text).toBe('from the fallback')
    expect(hung.requests).toHaveLength(1)
    expect(backup.requests).toHaveLength(1)
  })

  it('the createGateway option replaces the config policy.firstTokenTimeoutMs', async () => {
    const { hung, backup, harness } = await start({}, { firstTokenTimeoutMs: 600_000 })
    await harness.close()
    // 2 s, not 300 ms: it applies to the backup's attempt too (see above).
    const replaced = await startHarness(harness.running.gateway.config, {
      firstTokenTimeoutMs: 2000,
    })
    try {
      const stream = await replaced.client.chat.completions.create({
        model: 'm',
        messages: [{ role: 'user', content: 'hi' }],
        stream: true,
      })
      let text = ''
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? ''
      expect(text).toBe('from the fallback')
      expect(hung.requests).toHaveLength(1)
      expect(backup.requests).toHaveLength(1)
    } finally {
      await replaced.close()
    }
  })
})
