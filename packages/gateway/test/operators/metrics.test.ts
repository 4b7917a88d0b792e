import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createFetch } from '@hourglass/fetch'
import { keyId, RetryBudgetRegistry } from '@hourglass/llm'
import { type FakeProvider, openAIErrors, reply } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from '../support/harness.js'
import { samples } from '../support/promSamples.js'

function value(page: string, name: string, labels: Record<string, string> = {}): number {
  return samples(page)
    .filter(([n, l]) => n === name && Object.entries(labels).every(([k, v]) => l[k] === v))
    .reduce((sum, [, , v]) => sum + v, 0)
}

describe('GET /metrics', () => {
  let fakes: FakeProvider[] = []
  let harness: Harness | undefined
  afterEach(async () => {
    await harness?.close()
    await Promise.all(fakes.map((f) => f.close()))
    fakes = []
    harness = undefined
  })

  it('serves Prometheus text with requests, errors, attempts, fallbacks, cooldowns, waits, expiries, time to first token and tokens', async () => {
    const a = await fakeProvider('openai', ['sk-metrics-key-a-0001'])
    const b = await fakeProvider('qwen', ['sk-metrics-key-b-0002'])
    const c = await fakeProvider('openai', ['sk-metrics-key-c-0003'], { limits: { rpm: 1 } })
    fakes.push(a.fake, b.fake, c.fake)
    harness = await startHarness(
      {
        providers: { a: a.entry, b: b.entry, c: c.entry },
        models: {
          m: fallback(['a', 'model-a'], ['b', 'model-b']),
          only_b: fallback(['b', 'model-b']),
          only_c: fallback(['c', 'model-c']),
        },
        policy: { maxAttempts: 1 },
        // c's one request a window is spent by step 3's first request, and its
        // second waits for the reset: the two back to back, well within a
        // window. (When steps 1–3 spent an RPM of 3 on b, a run under load
        // reached step 3 after the window had ended and counted no wait: at
        // 1000 ms, and at 2000 ms steps 1–2 alone took 1.7–2.3 s with four
        // workers beside a busy loop on two cores.)
        limits: { windowMs: 2000 },
      },
      { drainTimeoutMs: 0 },
    )
    const { client } = harness
    // 1. a is rate limited (its key cools down), b answers: an attempt each, a fallback, tokens.
    a.fake.enqueue(openAIErrors.rateLimited({ retryAfterS: 30 }))
    b.fake.enqueue(reply.text('one two three', { usage: { inputTokens: 11, outputTokens: 3 } }))
    await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }] })
    // 2. A stream: time to first token.
    b.fake.enqueue(reply.text('streamed', { firstTokenDelayMs: 30 }))
    const stream = await client.chat.completions.create({
      model: 'only_b',
      messages: [{ role: 'user', content: 'x' }],
      stream: true,
    })
    for await (const _ of stream) {
      // drain it
    }
    // 3. c's RPM (1) is spent by the next request; the one after waits for the window's reset (it fits the deadline).
    c.fake.enqueue(reply.text('before the wait'), reply.text('after the wait'))
    await client.chat.completions.create({
      model: 'only_c',
      messages: [{ role: 'user', content: 'x' }],
    })
    await client.chat.completions.create({
      model: 'only_c',
      messages: [{ role: 'user', content: 'x' }],
    })
    // 4. Out of time: a 504.
    b.fake.enqueue(reply.text('too late', { latencyMs: 3000 }))
    const late = await fetch(`${harness.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-deadline-remaining-ms': '200' },
      body: JSON.stringify({ model: 'only_b', messages: [{ role: 'user', content: 'x' }] }),
    })
    expect(late.status).toBe(504)
    // 5. An unknown model: a 404.
    await client.chat.completions
      .create({ model: 'nope', messages: [{ role: 'user', content: 'x' }] })
      .catch(() => {})

    const res = await fetch(`${harness.url}/metrics`)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/)
    const page = await res.text()

    expect(value(page, 'hourglass_gateway_requests_total', { status_class: '2xx' })).toBe(4)
    expect(value(page, 'hourglass_gateway_requests_total', { status_class: '5xx' })).toBe(1)
    expect(value(page, 'hourglass_gateway_requests_total', { status_class: '4xx' })).toBe(1)
    expect(value(page, 'hourglass_gateway_errors_total', { kind: 'deadline_exceeded' })).toBe(1)
    expect(value(page, 'hourglass_gateway_errors_total', { kind: 'model_not_found' })).toBe(1)
    expect(value(page, 'hourglass_gateway_deadline_expiries_total')).toBe(1)
    expect(
      value(page, 'hourglass_gateway_upstream_attempts_total', {
        provider: 'a',
        outcome: 'fallback',
        error_kind: 'rate_limited',
      }),
    ).toBe(1)
    expect(
      value(page, 'hourglass_gateway_upstream_attempts_total', {
        provider: 'b',
        outcome: 'success',
      }),
    ).toBe(2)
    expect(
      value(page, 'hourglass_gateway_upstream_attempts_total', {
        provider: 'c',
        outcome: 'success',
      }),
    ).toBe(2)
    expect(value(page, 'hourglass_gateway_fallbacks_total', { provider: 'a' })).toBe(1)
    expect(
      value(page, 'hourglass_gateway_cooldowns_total', {
        provider: 'a',
        key_id: keyId('sk-metrics-key-a-0001'),
        // A 429: it holds that model on that key, not the key's other models.
        scope: 'model',
      }),
    ).toBe(1)
    expect(value(page, 'hourglass_gateway_waits_total', { provider: 'c', reason: 'rpm' })).toBe(1)
    // Counted once, as what it was: not also as a cooldown wait.
    expect(value(page, 'hourglass_gateway_waits_total', { provider: 'c' })).toBe(1)
    expect(value(page, 'hourglass_gateway_wait_duration_seconds_count', { reason: 'rpm' })).toBe(1)
    expect(
      value(page, 'hourglass_gateway_tokens_total', { provider: 'b', type: 'input' }),
    ).toBeGreaterThanOrEqual(11)
    expect(
      value(page, 'hourglass_gateway_tokens_total', { provider: 'b', type: 'output' }),
    ).toBeGreaterThanOrEqual(3)
    expect(
      value(page, 'hourglass_gateway_time_to_first_token_seconds_count', { model: 'only_b' }),
    ).toBe(1)
    expect(
      value(page, 'hourglass_gateway_time_to_first_token_seconds_sum', { model: 'only_b' }),
    ).toBeGreaterThan(0.02)
    expect(value(page, 'hourglass_gateway_request_duration_seconds_count')).toBe(6)
    // Units in metadata, durations in seconds.
    expect(page).toContain('# UNIT hourglass_gateway_request_duration_seconds s')
    expect(page).toContain('# UNIT hourglass_gateway_time_to_first_token_seconds s')
    expect(page).toContain('# UNIT hourglass_gateway_wait_duration_seconds s')
    expect(page).toContain('# TYPE hourglass_gateway_requests_total counter')
    // Key ids, never keys.
    expect(page).not.toMatch(/sk-metrics-key|metrics-key-a|metrics-key-b/)
  })

  it('a request that waits for its only key to cool down counts a wait with reason cooldown, by provider and key id', async () => {
    const key = 'sk-cooling-key-0001'
    const p = await fakeProvider('openai', [key])
    fakes.push(p.fake)
    harness = await startHarness({
      providers: { p: p.entry },
      models: { m: fallback(['p', 'model-p']) },
      policy: { maxAttempts: 2 },
    })
    // The only key is told to wait 200 ms: the retry waits for its cooldown, then succeeds.
    p.fake.enqueue(openAIErrors.rateLimited({ retryAfterMs: 200 }), reply.text('after cooling'))
    const answer = await harness.client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'x' }],
    })
    expect(answer.choices[0]?.message.content).toBe('after cooling')
    expect(p.fake.requests).toHaveLength(2)

    const page = await (await fetch(`${harness.url}/metrics`)).text()
    const labels = { provider: 'p', key_id: keyId(key), reason: 'cooldown' }
    expect(value(page, 'hourglass_gateway_cooldowns_total', { provider: 'p' })).toBe(1)
    expect(value(page, 'hourglass_gateway_waits_total', labels)).toBe(1)
    expect(value(page, 'hourglass_gateway_waits_total')).toBe(1)
    expect(value(page, 'hourglass_gateway_wait_duration_seconds_count', labels)).toBe(1)
    // The wait's length, in seconds (200 ms would read 200 in ms): the time
    // actually waited, which a loaded machine's late timers can stretch past
    // the 200 ms planned — so no bound at the plan.
    const waited = value(page, 'hourglass_gateway_wait_duration_seconds_sum', labels)
    expect(waited).toBeGreaterThan(0)
    expect(waited).toBeLessThan(5)
    expect(page).not.toContain(key)
  })

  it('a provider skipped by admission while cooling counts a fallback, and each leaving counts once', async () => {
    const a = await fakeProvider('openai', ['sk-skip-a'])
    const b = await fakeProvider('openai', ['sk-skip-b'])
    const c = await fakeProvider('openai', ['sk-skip-c'])
    fakes.push(a.fake, b.fake, c.fake)
    harness = await startHarness({
      providers: { a: a.entry, b: b.entry, c: c.entry },
      models: { m: fallback(['a', 'model-a'], ['b', 'model-b'], ['c', 'model-c']) },
      policy: { maxAttempts: 1 },
    })
    const ask = () =>
      harness!.client.chat.completions.create({
        model: 'm',
        messages: [{ role: 'user', content: 'x' }],
      })
    // 1. a answers 429 (30 s): an attempt that falls back; b answers.
    a.fake.enqueue(openAIErrors.rateLimited({ retryAfterS: 30 }))
    b.fake.enqueue(reply.text('from b'))
    expect((await ask()).choices[0]?.message.content).toBe('from b')
    // 2. a is still cooling: admission skips it with nothing sent; b answers
    // 429 (an attempt that falls back); c answers.
    b.fake.enqueue(openAIErrors.rateLimited({ retryAfterS: 30 }))
    c.fake.enqueue(reply.text('from c'))
    expect((await ask()).choices[0]?.message.content).toBe('from c')
    expect(a.fake.requests).toHaveLength(1)

    const page = await (await fetch(`${harness.url}/metrics`)).text()
    // a was left twice (after its attempt, then by admission), b once: never both for one leaving.
    expect(value(page, 'hourglass_gateway_fallbacks_total', { provider: 'a' })).toBe(2)
    expect(value(page, 'hourglass_gateway_fallbacks_total', { provider: 'b' })).toBe(1)
    expect(value(page, 'hourglass_gateway_fallbacks_total')).toBe(3)
    expect(
      value(page, 'hourglass_gateway_upstream_attempts_total', {
        provider: 'a',
        outcome: 'fallback',
      }),
    ).toBe(1)
    expect(
      value(page, 'hourglass_gateway_upstream_attempts_total', {
        provider: 'b',
        outcome: 'fallback',
      }),
    ).toBe(1)
  })

  it('a provider at its RPM limit, skipped by admission with nothing sent, counts a fallback', async () => {
    const a = await fakeProvider('openai', ['sk-rpm-a'], { limits: { rpm: 1 } })
    const b = await fakeProvider('openai', ['sk-rpm-b'])
    fakes.push(a.fake, b.fake)
    harness = await startHarness({
      providers: { a: a.entry, b: b.entry },
      models: { m: fallback(['a', 'model-a'], ['b', 'model-b']) },
    })
    a.fake.enqueue(reply.text('from a'))
    b.fake.enqueue(reply.text('from b'))
    const answers = []
    for (let i = 0; i < 2; i++) {
      const answer = await harness.client.chat.completions.create({
        model: 'm',
        messages: [{ role: 'user', content: 'x' }],
      })
      answers.push(answer.choices[0]?.message.content)
    }
    // The second finds a's one request per minute spent: not waited for (b answers sooner).
    expect(answers).toEqual(['from a', 'from b'])
    expect(a.fake.requests).toHaveLength(1)

    const page = await (await fetch(`${harness.url}/metrics`)).text()
    expect(value(page, 'hourglass_gateway_fallbacks_total', { provider: 'a' })).toBe(1)
    expect(value(page, 'hourglass_gateway_fallbacks_total')).toBe(1)
    expect(value(page, 'hourglass_gateway_upstream_attempts_total', { outcome: 'fallback' })).toBe(
      0,
    )
    expect(value(page, 'hourglass_gateway_waits_total')).toBe(0)
  })

  it('an unknown /v1 path is counted as the code the client got: not_found', async () => {
    const a = await fakeProvider('openai', ['key-one'])
    fakes.push(a.fake)
    harness = await startHarness({
      providers: { a: a.entry },
      models: { m: fallback(['a', 'model-a']) },
    })
    const res = await fetch(`${harness.url}/v1/embeddings`, { method: 'POST', body: '{}' })
    expect(res.status).toBe(404)
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('not_found')

    const page = await (await fetch(`${harness.url}/metrics`)).text()
    expect(value(page, 'hourglass_gateway_requests_total', { status_class: '4xx' })).toBe(1)
    expect(value(page, 'hourglass_gateway_errors_total', { kind: 'not_found' })).toBe(1)
    expect(value(page, 'hourglass_gateway_errors_total')).toBe(1)
  })

  it('an API path in another case, which the router serves, is counted like /v1/', async () => {
    const a = await fakeProvider('openai', ['key-one'])
    fakes.push(a.fake)
    harness = await startHarness({
      providers: { a: a.entry },
      models: { m: fallback(['a', 'model-a']) },
    })
    a.fake.enqueue(reply.text('served'))
    const res = await fetch(`${harness.url}/V1/Chat/Completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x' }] }),
    })
    expect(res.status).toBe(200)
    await res.text()
    // Not an API path: probes and scrapes are not counted, whatever their case.
    expect((await fetch(`${harness.url}/HEALTHZ`)).status).toBe(200)

    const page = await (await fetch(`${harness.url}/metrics`)).text()
    expect(value(page, 'hourglass_gateway_requests_total', { status_class: '2xx' })).toBe(1)
    expect(value(page, 'hourglass_gateway_requests_total')).toBe(1)
  })

  it('two gateways in one process count only their own requests', async () => {
    const a = await fakeProvider('openai', ['key-one'])
    fakes.push(a.fake)
    const config = { providers: { a: a.entry }, models: { m: fallback(['a', 'model-a']) } }
    harness = await startHarness(config)
    const other = await startHarness(config)
    try {
      await other.client.chat.completions.create({
        model: 'm',
        messages: [{ role: 'user', content: 'x' }],
      })
      await other.client.chat.completions.create({
        model: 'm',
        messages: [{ role: 'user', content: 'x' }],
      })
      await harness.client.chat.completions.create({
        model: 'm',
        messages: [{ role: 'user', content: 'x' }],
      })
      const mine = await (await fetch(`${harness.url}/metrics`)).text()
      const theirs = await (await fetch(`${other.url}/metrics`)).text()
      expect(value(mine, 'hourglass_gateway_upstream_attempts_total')).toBe(1)
      expect(value(theirs, 'hourglass_gateway_upstream_attempts_total')).toBe(2)
    } finally {
      await other.close()
    }
  })

  // An attempt llm reports `sent: false` (here the HTTP client refused it at
  // once: every deadline is under its minBudgetMs) reached no provider: as
  // one of the provider's attempts it read as that provider failing.
  it('an attempt that was never sent is no upstream attempt: the provider saw nothing', async () => {
    const p = await fakeProvider('openai', ['sk-metrics-unsent-0004'])
    fakes.push(p.fake)
    p.fake.setReply(reply.text('never asked'))
    harness = await startHarness(
      { providers: { p: p.entry }, models: { m: fallback(['p', 'model-p']) } },
      { fetch: createFetch({ minBudgetMs: 600_000 }) },
    )
    const res = await fetch(`${harness.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x' }] }),
    })
    expect(res.status).toBe(504)
    await res.text()
    expect(p.fake.requests).toHaveLength(0)
    const page = await (await fetch(`${harness.url}/metrics`)).text()
    expect(value(page, 'hourglass_gateway_errors_total', { kind: 'deadline_exceeded' })).toBe(1)
    expect(value(page, 'hourglass_gateway_upstream_attempts_total')).toBe(0)
  })

  // Two models of one provider on a fallback list (a smaller model as the
  // fallback is common): one client retry refused by that provider's budget
  // is one refusal there, not one per model.
  it('a client retry refused by a provider that serves two models of the list counts one refusal', async () => {
    const p = await fakeProvider('openai', ['sk-metrics-retry-0003'])
    fakes.push(p.fake)
    const retryBudgets = new RetryBudgetRegistry({ maxTokens: 10, tokenRatio: 0.1 })
    // Spent to half: the next client retry is refused at once, nothing sent.
    const budget = retryBudgets.forProvider({ name: 'p', baseURL: p.fake.baseURL })
    for (let i = 0; i < 5; i++) budget.recordFailure()
    harness = await startHarness(
      { providers: { p: p.entry }, models: { m: fallback(['p', 'big'], ['p', 'small']) } },
      { retryBudgets },
    )
    const res = await fetch(`${harness.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-stainless-retry-count': '1' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x' }] }),
    })
    expect(res.status).toBe(503)
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe(
      'retry_budget_exhausted',
    )
    const page = await (await fetch(`${harness.url}/metrics`)).text()
    expect(
      value(page, 'hourglass_gateway_client_retries_total', { provider: 'p', outcome: 'refused' }),
    ).toBe(1)
    expect(value(page, 'hourglass_gateway_requests_total', { status_class: '5xx' })).toBe(1)
    expect(p.fake.requests).toHaveLength(0)
  })

  it('can be turned off when it must not share the API port', async () => {
    const a = await fakeProvider('openai', ['key-one'])
    fakes.push(a.fake)
    harness = await startHarness(
      { providers: { a: a.entry }, models: { m: fallback(['a', 'model-a']) } },
      { metrics: false },
    )
    expect((await fetch(`${harness.url}/metrics`)).status).toBe(404)
  })

  it('with metrics: false, serveMetrics serves the same page on a server of your own (an admin port)', async () => {
    const a = await fakeProvider('openai', ['key-one'])
    fakes.push(a.fake)
    harness = await startHarness(
      { providers: { a: a.entry }, models: { m: fallback(['a', 'model-a']) } },
      { metrics: false },
    )
    const gateway = harness.running.gateway
    const admin = createServer((req, res) => gateway.serveMetrics(req, res))
    await new Promise<void>((resolve) => admin.listen(0, '127.0.0.1', resolve))
    try {
      await harness.client.chat.completions.create({
        model: 'm',
        messages: [{ role: 'user', content: 'x' }],
      })
      const { port } = admin.address() as AddressInfo
      const page = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text()
      expect(value(page, 'hourglass_gateway_upstream_attempts_total')).toBe(1)
      expect((await fetch(`${harness.url}/metrics`)).status).toBe(404)
    } finally {
      await new Promise((resolve) => admin.close(resolve))
    }
  })
})
