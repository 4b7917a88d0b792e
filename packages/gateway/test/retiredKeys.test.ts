import {
  type FakeProvider,
  openAIErrors,
  qwenErrors,
  type RecordedRequest,
  reply,
} from '@hourglass/testkit'
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

  it('one key retired, the other out of quota until a time: a 429 naming the wait, not every key rejected', async () => {
    // The key out of quota for 30 s was left out of the call's choice as
    // "not held back longer than the others" (the retired one: for ever),
    // and the retired key alone gave 502 upstream_auth_failed.
    const { fake, entry } = await fakeProvider('openai', ['sk-dead-key-aaaa', 'sk-quota-key-bbbb'])
    fakes.push(fake)
    harness = await startHarness({ providers: { o: entry }, models: { m: fallback(['o', 'o-1']) } })
    let quotaGone = false
    fake.setReply((r: RecordedRequest) =>
      r.apiKey === 'sk-dead-key-aaaa'
        ? openAIErrors.authentication()
        : quotaGone
          ? { ...openAIErrors.insufficientQuota(), headers: { 'retry-after': '30' } }
          : reply.text('ok'),
    )
    const first = await fetch(`${harness.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
    })
    expect(first.status).toBe(200) // sk-dead-key-aaaa retired, answered by the other
    await first.body?.cancel()
    quotaGone = true
    // 5 s left: the 30 s wait does not fit, the client is told to come back.
    const second = await fetch(`${harness.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-deadline-remaining-ms': '5000' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
    })
    const body = (await second.json()) as { error: { code: string } }
    expect(`${second.status} ${body.error.code}`).toBe('429 rate_limit_exceeded')
    expect(Number(second.headers.get('retry-after'))).toBeGreaterThan(20)
  })

  it('a model refused on every key (Qwen AccessDenied): the reply names the model, not every key rejected', async () => {
    // The keys are retired for qwen3-max only: they still serve the
    // account's other models, and "every key rejected" sent operators to
    // look for a revoked key.
    const { fake, entry } = await fakeProvider('qwen', ['sk-qwen-key-aaaa'])
    fakes.push(fake)
    harness = await startHarness({
      providers: { q: entry },
      models: { m: fallback(['q', 'qwen3-max']) },
    })
    fake.setReply(qwenErrors.modelAccessDenied())

    await post()
    const res = await fetch(`${harness.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
    })
    const body = (await res.json()) as { error: { code: string; message: string } }
    expect(`${res.status} ${body.error.code}`).toBe('502 upstream_auth_failed')
    expect(body.error.message).toBe('no provider could answer (q: every key refused for qwen3-max)')
    expect(fake.requests).toHaveLength(1)
  })
})
