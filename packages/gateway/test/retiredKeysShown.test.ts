import { type FakeProvider, geminiErrors, openAIErrors, reply } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'
import { samples } from './support/promSamples.js'

/*
 * A provider whose every key is retired (rejected, or its quota gone for
 * good) answers nothing until the gateway restarts, and `/readyz` stays 200
 * — deliberately: the keys are the fleet's, and a 503 would take every
 * instance out at once. But nothing said it: `/readyz` read
 * `{"status":"ready","redis":"none"}` and `/metrics` had no series of it. It
 * is in the `/readyz` body (`keysRetired`) and in a gauge of retired keys.
 */

describe('retired keys are shown where operators look', () => {
  let fakes: FakeProvider[] = []
  let harness: Harness | undefined
  afterEach(async () => {
    await harness?.close()
    await Promise.all(fakes.map((f) => f.close()))
    fakes = []
    harness = undefined
  })

  async function readyz(): Promise<{ status: number; body: unknown }> {
    const res = await fetch(`${harness!.url}/readyz`)
    return { status: res.status, body: await res.json() }
  }

  async function retiredGauge(): Promise<Record<string, number>> {
    const page = await (await fetch(`${harness!.url}/metrics`)).text()
    const out: Record<string, number> = {}
    for (const [name, labels, value] of samples(page)) {
      if (name !== 'hourglass_gateway_retired_keys') continue
      out[[labels['provider'], labels['scope'], labels['model']].filter(Boolean).join(' ')] = value
    }
    return out
  }

  async function ask(): Promise<string> {
    const answer = await harness!.client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
    })
    return answer.choices[0]?.message.content ?? ''
  }

  it('every key of a provider retired: /readyz stays 200 and names it; the gauge counts its keys', async () => {
    const a = await fakeProvider('openai', ['sk-a-bad-key-0001', 'sk-a-good-key-0002'])
    const b = await fakeProvider('openai', ['sk-b-key-0003'])
    fakes.push(a.fake, b.fake)
    harness = await startHarness(
      {
        providers: { a: a.entry, b: b.entry },
        models: { m: fallback(['a', 'a-1'], ['b', 'b-1']) },
      },
      { drainOnSignals: false },
    )
    expect(await readyz()).toEqual({ status: 200, body: { status: 'ready', redis: 'none' } })
    expect(await retiredGauge()).toEqual({ 'a key': 0, 'b key': 0 })

    // One key of two rejected: the provider still answers; nothing to name.
    let spent = false
    a.fake.setReply((request) =>
      request.apiKey === 'sk-a-bad-key-0001' || spent
        ? openAIErrors.authentication()
        : reply.text('from a'),
    )
    b.fake.setReply(reply.text('from b'))
    expect(await ask()).toBe('from a')
    expect(await readyz()).toEqual({ status: 200, body: { status: 'ready', redis: 'none' } })
    expect(await retiredGauge()).toEqual({ 'a key': 1, 'b key': 0 })

    // Its other key revoked too: b answers, a is out until restart.
    spent = true
    expect(await ask()).toBe('from b')
    expect(await readyz()).toEqual({
      status: 200,
      body: { status: 'ready', redis: 'none', keysRetired: [{ provider: 'a' }] },
    })
    expect(await retiredGauge()).toEqual({ 'a key': 2, 'b key': 0 })
  })

  it('a quota gone for good retires the key: named the same way', async () => {
    const { fake, entry } = await fakeProvider('openai', ['sk-spent-key-0004'])
    fakes.push(fake)
    harness = await startHarness(
      { providers: { o: entry }, models: { m: fallback(['o', 'o-1']) } },
      { drainOnSignals: false },
    )
    fake.setReply(openAIErrors.insufficientQuota())
    await expect(ask()).rejects.toMatchObject({ status: 429 })
    expect((await readyz()).body).toEqual({
      status: 'ready',
      redis: 'none',
      keysRetired: [{ provider: 'o' }],
    })
    expect(await retiredGauge()).toEqual({ 'o key': 1 })
  })

  it('a quota at zero for one model retires that model on the key: the model is named', async () => {
    const { fake, entry } = await fakeProvider('gemini', ['only-key-0005'])
    fakes.push(fake)
    harness = await startHarness(
      { providers: { g: entry }, models: { m: fallback(['g', 'gemini-2.0-flash']) } },
      { drainOnSignals: false },
    )
    fake.setReply(geminiErrors.resourceExhausted({ limit: 0 }))
    await expect(ask()).rejects.toMatchObject({ status: 429 })
    expect((await readyz()).body).toEqual({
      status: 'ready',
      redis: 'none',
      keysRetired: [{ provider: 'g', model: 'gemini-2.0-flash' }],
    })
    expect(await retiredGauge()).toEqual({ 'g key': 0, 'g model gemini-2.0-flash': 1 })
  })
})
