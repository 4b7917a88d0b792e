import { type FakeProvider, openAIErrors, reply } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from '../support/harness.js'

/** The samples of one family on a Prometheus text page, as `labels → value` (`''` for none). */
function series(page: string, name: string): Map<string, number> {
  const found = new Map<string, number>()
  for (const line of page.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)(\{.*\})? (\S+)$/.exec(line)
    if (match?.[1] === name) found.set(match[2] ?? '', Number(match[3]))
  }
  return found
}

/**
 * Prometheus reads a counter series that first appears at 1 as one that was
 * always 1: `increase()` and `rate()` start from its first sample, so the
 * event that created it is never counted — after every restart (a deploy),
 * the first deadline expiry or fallback did not show in an alert on
 * `increase(…[5m]) > 0`. A counter whose every series is known when the
 * gateway starts is on the first page at 0, so its first event is an
 * increase like any other (Prometheus's "avoid missing metrics").
 */
describe('/metrics counters known at start', () => {
  let fakes: FakeProvider[] = []
  let harness: Harness | undefined
  afterEach(async () => {
    await harness?.close()
    await Promise.all(fakes.map((f) => f.close()))
    fakes = []
    harness = undefined
  })

  const scrape = async () => (await fetch(`${harness!.url}/metrics`)).text()

  it('are on the first scrape at 0, then go up by exactly one per event', async () => {
    const a = await fakeProvider('openai', ['sk-from-zero-a-0001'])
    const b = await fakeProvider('qwen', ['sk-from-zero-b-0002'])
    fakes.push(a.fake, b.fake)
    harness = await startHarness(
      {
        providers: { a: a.entry, b: b.entry },
        models: { m: fallback(['a', 'model-a'], ['b', 'model-b']), only_b: fallback(['b', 'x']) },
        policy: { maxAttempts: 1 },
      },
      { drainTimeoutMs: 0 },
    )

    const before = await scrape()
    expect(Object.fromEntries(series(before, 'hourglass_gateway_requests_total'))).toEqual({
      '{status_class="2xx"}': 0,
      '{status_class="4xx"}': 0,
      '{status_class="5xx"}': 0,
    })
    expect(Object.fromEntries(series(before, 'hourglass_gateway_deadline_expiries_total'))).toEqual(
      { '': 0 },
    )
    expect(Object.fromEntries(series(before, 'hourglass_gateway_fallbacks_total'))).toEqual({
      '{provider="a"}': 0,
      '{provider="b"}': 0,
    })

    // One fallback (a fails, b answers) and one expiry.
    a.fake.enqueue(openAIErrors.serverError())
    b.fake.enqueue(reply.text('from b'))
    await harness.client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'x' }],
    })
    b.fake.enqueue(reply.text('too late', { latencyMs: 3000 }))
    const late = await fetch(`${harness.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-deadline-remaining-ms': '200' },
      body: JSON.stringify({ model: 'only_b', messages: [{ role: 'user', content: 'x' }] }),
    })
    expect(late.status).toBe(504)
    await late.text()

    const after = await scrape()
    expect(Object.fromEntries(series(after, 'hourglass_gateway_requests_total'))).toEqual({
      '{status_class="2xx"}': 1,
      '{status_class="4xx"}': 0,
      '{status_class="5xx"}': 1,
    })
    expect(Object.fromEntries(series(after, 'hourglass_gateway_deadline_expiries_total'))).toEqual({
      '': 1,
    })
    expect(Object.fromEntries(series(after, 'hourglass_gateway_fallbacks_total'))).toEqual({
      '{provider="a"}': 1,
      '{provider="b"}': 0,
    })
  })

  it('two gateways in one process each start their own at 0', async () => {
    const a = await fakeProvider('openai', ['sk-from-zero-c-0003'])
    fakes.push(a.fake)
    const config = { providers: { a: a.entry }, models: { m: fallback(['a', 'model-a']) } }
    harness = await startHarness(config)
    const other = await startHarness(config)
    try {
      a.fake.enqueue(reply.text('one'))
      await other.client.chat.completions.create({
        model: 'm',
        messages: [{ role: 'user', content: 'x' }],
      })
      const mine = series(await scrape(), 'hourglass_gateway_requests_total')
      const theirs = series(
        await (await fetch(`${other.url}/metrics`)).text(),
        'hourglass_gateway_requests_total',
      )
      expect(mine.get('{status_class="2xx"}')).toBe(0)
      expect(theirs.get('{status_class="2xx"}')).toBe(1)
    } finally {
      await other.close()
    }
  })
})
