import { anthropicErrors, type FakeProvider, openAIErrors, reply } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

/**
 * A gateway whose provider is another Hourglass gateway (an `openai` entry
 * whose baseURL is the inner gateway's /v1). The inner gateway routes per
 * model: its 503 `overloaded` for one model says nothing of its other
 * routes, so the outer gateway must not cool every model it sends there.
 */
describe('a gateway behind a gateway: one route overloaded', () => {
  let fakes: FakeProvider[] = []
  let harnesses: Harness[] = []
  afterEach(async () => {
    await Promise.all(harnesses.map((h) => h.close()))
    await Promise.all(fakes.map((f) => f.close()))
    fakes = []
    harnesses = []
  })

  const post = (url: string, model: string) =>
    fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-deadline-remaining-ms': '2000' },
      body: JSON.stringify({ model, messages: [{ role: 'user', content: 'x' }] }),
    })

  /**
   * px serves model x (answering `failure`), py model y (answering text),
   * behind the inner gateway; the outer one's only provider, b, is the
   * inner gateway, with `outerModels` routed through it.
   */
  const twoGateways = async (
    pxDialect: 'anthropic' | 'openai',
    failure: Parameters<FakeProvider['setReply']>[0],
    outerModels: Record<string, unknown>,
    policy?: { max529Retries: number },
  ) => {
    const px = await fakeProvider(pxDialect, ['k'])
    const py = await fakeProvider('openai', ['k'])
    fakes.push(px.fake, py.fake)
    px.fake.setReply(failure)
    py.fake.setReply(reply.text('from y'))
    const inner = await startHarness({
      providers: { px: px.entry, py: py.entry },
      models: { x: fallback(['px', 'gpt-x']), y: fallback(['py', 'gpt-y']) },
      ...(policy === undefined ? {} : { policy }),
    })
    harnesses.push(inner)
    const outer = await startHarness({
      providers: { b: { dialect: 'openai', baseURL: `${inner.url}/v1`, apiKeys: ['k2'] } },
      models: outerModels,
      ...(policy === undefined ? {} : { policy }),
    })
    harnesses.push(outer)
    return { px, py, inner, outer }
  }

  it('the inner gateway marks its overload as its route’s, and the outer one keeps sending the healthy route', async () => {
    const { px, py, inner, outer } = await twoGateways(
      'anthropic',
      anthropicErrors.overloaded(),
      { x: fallback(['b', 'x']), y: fallback(['b', 'y']) },
      { max529Retries: 0 },
    )

    const x = await post(outer.url, 'x')
    expect(x.status).toBe(503)
    expect(px.fake.requests).toHaveLength(1)

    // The inner gateway answers y at once…
    expect((await post(inner.url, 'y')).status).toBe(200)
    const sent = py.fake.requests.length
    // …and so must the outer one: before, 503 "b is overloaded: retry after ~6000 ms",
    // nothing sent, for the 5–10 s of a provider-wide cooldown.
    const y = await post(outer.url, 'y')
    expect(y.status).toBe(200)
    expect(py.fake.requests.length).toBe(sent + 1)
    // x itself is still held back at the outer gateway: nothing more sent to px.
    expect((await post(outer.url, 'x')).status).toBe(503)
    expect(px.fake.requests).toHaveLength(1)
  })

  it('a fallback to another model of the same inner gateway is sent when the first model is overloaded', async () => {
    const { px, py, outer } = await twoGateways(
      'anthropic',
      anthropicErrors.overloaded(),
      { x: fallback(['b', 'x'], ['b', 'y']) },
      { max529Retries: 0 },
    )
    // Before: 503 "no provider could answer (b/x: overloaded; b: overloaded)", y never asked.
    const res = await post(outer.url, 'x')
    expect(res.status).toBe(200)
    expect(px.fake.requests).toHaveLength(1)
    expect(py.fake.requests).toHaveLength(1)
  })

  it('one model’s spent quota at the inner gateway retires that model at the outer one, not the key', async () => {
    const { py, outer } = await twoGateways('openai', openAIErrors.insufficientQuota(), {
      x: fallback(['b', 'x']),
      y: fallback(['b', 'y']),
    })
    const x = await post(outer.url, 'x')
    expect(x.status).toBe(429)
    expect(x.headers.get('x-hourglass-cooldown-scope')).toBe('model')
    // Before: the outer gateway's one key to the inner one was retired for
    // the quota, and y, answered by the inner gateway, was refused too.
    const y = await post(outer.url, 'y')
    expect(y.status).toBe(200)
    expect(py.fake.requests).toHaveLength(1)
  })
})
