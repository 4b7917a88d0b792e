import { type FakeProvider, openAIErrors, reply } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

/**
 * Keys rejected (401) or out of quota for good (OpenAI's `insufficient_quota`)
 * are retired until restart: later requests are refused by admission without
 * sending anything. To the client that is the same failure as the answer
 * that retired them — 502 `upstream_auth_failed`, or 429
 * `insufficient_quota` — with `x-should-retry: false`, not a generic 502
 * `upstream_error` that the SDK retries against a gateway that sends nothing.
 */
describe('every key retired: later requests get the answer the first one got', () => {
  let fakes: FakeProvider[] = []
  let harness: Harness | undefined
  afterEach(async () => {
    await harness?.close()
    await Promise.all(fakes.map((f) => f.close()))
    fakes = []
    harness = undefined
  })

  async function post(): Promise<{ status: number; code: string; retry: string | null }> {
    const res = await fetch(`${harness!.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
    })
    const body = (await res.json()) as { error: { code: string } }
    return { status: res.status, code: body.error.code, retry: res.headers.get('x-should-retry') }
  }

  it('rejected keys: 502 upstream_auth_failed every time, and nothing sent after the first', async () => {
    const a = await fakeProvider('openai', ['sk-bad-key-aaaa'])
    const b = await fakeProvider('anthropic', ['sk-bad-key-bbbb'])
    fakes.push(a.fake, b.fake)
    harness = await startHarness({
      providers: { a: a.entry, b: b.entry },
      models: { m: fallback(['a', 'a-1'], ['b', 'b-1']) },
    })
    a.fake.setReply(openAIErrors.authentication())
    b.fake.setReply(reply.error(401, { type: 'error', error: { type: 'authentication_error' } }))

    const expected = { status: 502, code: 'upstream_auth_failed', retry: 'false' }
    expect(await post()).toEqual(expected)
    const sent = a.fake.requests.length + b.fake.requests.length
    expect(await post()).toEqual(expected)
    expect(a.fake.requests.length + b.fake.requests.length).toBe(sent)
  })

  it('keys out of quota: 429 insufficient_quota every time, never an auth failure', async () => {
    const { fake, entry } = await fakeProvider('openai', ['sk-spent-key-aaaa'])
    fakes.push(fake)
    harness = await startHarness({ providers: { o: entry }, models: { m: fallback(['o', 'o-1']) } })
    fake.setReply(openAIErrors.insufficientQuota())

    const expected = { status: 429, code: 'insufficient_quota', retry: 'false' }
    expect(await post()).toEqual(expected)
    expect(await post()).toEqual(expected)
    expect(fake.requests).toHaveLength(1)
  })
})
