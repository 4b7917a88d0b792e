import { createFetch } from '@hourglass/fetch'
import { RetryBudgetRegistry } from '@hourglass/llm'
import { type FakeProvider, openAIErrors, reply } from '@hourglass/testkit'
import OpenAI from 'openai'
import { afterEach, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from '../support/harness.js'

/**
 * `X-Stainless-Retry-Count > 0` (the official SDKs send it on every retry)
 * counts against the provider's retry budget before anything is sent, and
 * the charge stands if the retry fails at the provider too; a retry meeting
 * a spent budget is not sent there.
 */
describe('SDK retries and the retry budget', () => {
  let fakes: FakeProvider[] = []
  let harness: Harness | undefined
  afterEach(async () => {
    await harness?.close()
    await Promise.all(fakes.map((f) => f.close()))
    fakes = []
    harness = undefined
  })

  const post = (retryCount: string | undefined, model = 'm') =>
    fetch(`${harness!.url}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(retryCount === undefined ? {} : { 'x-stainless-retry-count': retryCount }),
      },
      body: JSON.stringify({ model, messages: [{ role: 'user', content: 'x' }] }),
    })

  it('a client retry that fails at the provider costs it a token; once the budget is below half, retries get 503 at once and reach nobody', async () => {
    const p = await fakeProvider('openai', ['k'])
    fakes.push(p.fake)
    p.fake.setReply(openAIErrors.serverError({ status: 500 }))
    const retryBudgets = new RetryBudgetRegistry({ maxTokens: 10, tokenRatio: 0.1 })
    harness = await startHarness(
      {
        providers: { p: p.entry },
        models: { m: fallback(['p', 'gpt']) },
        policy: { maxAttempts: 1 },
      },
      { retryBudgets },
    )
    // Each retry: its charge (−1) stands, as it failed at the provider, and
    // so does the provider's 500 (−1): 10 → 8 → 6 → 4; the fourth finds no
    // more than half.
    const statuses: number[] = []
    for (let i = 0; i < 4; i++) statuses.push((await post('1')).status)
    expect(statuses).toEqual([502, 502, 502, 503])
    expect(p.fake.requests).toHaveLength(3)
    expect(retryBudgets.forProvider({ name: 'p', baseURL: p.fake.baseURL }).tokens).toBe(4)
    const refused = await post('2')
    expect(refused.status).toBe(503)
    expect(refused.headers.get('x-should-retry')).toBe('false')
    const body = (await refused.json()) as { error: { code: string; message: string } }
    expect(body.error.code).toBe('retry_budget_exhausted')
    expect(body.error.message).toContain('(p)')
    expect(p.fake.requests).toHaveLength(3)
    // A first attempt still goes.
    p.fake.setReply(reply.text('ok'))
    expect((await post('0')).status).toBe(200)
    const page = await (await fetch(`${harness.url}/metrics`)).text()
    expect(page).toMatch(
      /hourglass_gateway_client_retries_total\{provider="p",outcome="admitted"\} 3/,
    )
    expect(page).toMatch(
      /hourglass_gateway_client_retries_total\{provider="p",outcome="refused"\} 2/,
    )
  })

  it('a retry that is answered, is the client’s own bad request, or is sent nowhere costs nothing: no client drains the budget with the header alone', async () => {
    const p = await fakeProvider('openai', ['k'])
    fakes.push(p.fake)
    p.fake.setReply(reply.text('ok'))
    const retryBudgets = new RetryBudgetRegistry({ maxTokens: 4, tokenRatio: 0.1 })
    harness = await startHarness(
      {
        providers: { p: p.entry },
        models: { m: fallback(['p', 'gpt']) },
        policy: { maxAttempts: 1 },
      },
      { retryBudgets },
    )
    // First attempts are never gated, and cost nothing.
    for (const count of [undefined, '0', 'abc']) expect((await post(count)).status).toBe(200)
    expect(retryBudgets.forProvider({ name: 'p', baseURL: p.fake.baseURL }).tokens).toBe(4)
    // Answered: charged, then refunded. Before, three of these left the
    // budget at half and the fourth retry — of anyone — was refused.
    for (let i = 0; i < 6; i++) expect((await post('1')).status).toBe(200)
    // Refused upstream as the client's own bad request (400): no provider's failure.
    p.fake.setReply(openAIErrors.badRequest())
    for (let i = 0; i < 6; i++) expect((await post('1')).status).toBe(400)
    // Sent nowhere: its budget already spent when it arrived.
    const spent = await fetch(`${harness.url}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-stainless-retry-count': '1',
        'x-deadline-remaining-ms': '0',
      },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x' }] }),
    })
    expect(spent.status).toBe(504)
    expect(p.fake.requests).toHaveLength(15)
    expect(retryBudgets.forProvider({ name: 'p', baseURL: p.fake.baseURL }).tokens).toBe(4)
    expect(retryBudgets.forProvider({ name: 'p', baseURL: p.fake.baseURL }).canRetry()).toBe(true)
  })

  it('a retry the HTTP client refused for its deadline (sent: false, a 504) costs nothing: nothing reached the provider', async () => {
    const p = await fakeProvider('openai', ['k'])
    fakes.push(p.fake)
    p.fake.setReply(reply.text('ok'))
    const retryBudgets = new RetryBudgetRegistry({ maxTokens: 4, tokenRatio: 0.1 })
    // Every deadline the gateway gives is under this fetch's minimum: each
    // attempt is refused before it leaves (its record: sent: false).
    const fetch10min = createFetch({ minBudgetMs: 600_000 })
    harness = await startHarness(
      {
        providers: { p: p.entry },
        models: { m: fallback(['p', 'gpt']) },
        policy: { maxAttempts: 1 },
      },
      { retryBudgets, fetch: fetch10min },
    )
    // Before, each kept its charge though nothing was sent (4 → 3 → 2), and
    // the third found the budget at half: a 503 for a provider that was never asked.
    const statuses: number[] = []
    for (let i = 0; i < 3; i++) statuses.push((await post('1')).status)
    expect(statuses).toEqual([504, 504, 504])
    expect(p.fake.requests).toHaveLength(0)
    const attempts = harness.logs.filter((l) => l.event === 'attempt')
    expect(attempts.length).toBeGreaterThan(0)
    expect(retryBudgets.forProvider({ name: 'p', baseURL: p.fake.baseURL }).tokens).toBe(4)
    await harness.close()
    harness = undefined
    await fetch10min.close()
  })

  // A stream's status is 200 however it ends: the charge of a retry whose
  // stream the provider broke after its first token (a 502 error event) was
  // refunded as if it had been answered.
  it('a streamed retry the provider breaks after its first token keeps its charge; one answered whole is refunded', async () => {
    const p = await fakeProvider('openai', ['k'])
    fakes.push(p.fake)
    const retryBudgets = new RetryBudgetRegistry({ maxTokens: 10, tokenRatio: 0.1 })
    harness = await startHarness(
      {
        providers: { p: p.entry },
        models: { m: fallback(['p', 'gpt']) },
        policy: { maxAttempts: 1 },
      },
      { retryBudgets },
    )
    const budget = () => retryBudgets.forProvider({ name: 'p', baseURL: p.fake.baseURL }).tokens
    const stream = async (retryCount: string) => {
      const res = await fetch(`${harness!.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-stainless-retry-count': retryCount },
        body: JSON.stringify({
          model: 'm',
          stream: true,
          messages: [{ role: 'user', content: 'x' }],
        }),
      })
      return { status: res.status, text: await res.text() }
    }
    // What the provider's own failure costs, with no client retry to charge.
    p.fake.setReply(reply.text('one two three', { cutAfterTokens: 2 }))
    const start = budget()
    const first = await stream('0')
    expect(first.status).toBe(200)
    expect(first.text).toContain('stream_interrupted')
    const ownFailure = start - budget()
    // The same failure on a client's retry costs one more: its charge stands.
    const beforeRetry = budget()
    const retried = await stream('1')
    expect(retried.text).toContain('stream_interrupted')
    expect(beforeRetry - budget()).toBe(ownFailure + 1)
    // Answered whole: charged, then refunded.
    p.fake.setReply(reply.text('one two three'))
    const beforeAnswered = budget()
    const answered = await stream('1')
    expect(answered.text).toContain('[DONE]')
    expect(budget()).toBeGreaterThanOrEqual(beforeAnswered)
  })

  it('a retry refused by a spent provider goes to the next provider of the list', async () => {
    const a = await fakeProvider('openai', ['ka'])
    const b = await fakeProvider('qwen', ['kb'])
    fakes.push(a.fake, b.fake)
    b.fake.setReply(reply.text('from b'))
    const retryBudgets = new RetryBudgetRegistry({ maxTokens: 2 })
    retryBudgets.forProvider({ name: 'a', baseURL: a.fake.baseURL }).recordFailure()
    harness = await startHarness(
      {
        providers: { a: a.entry, b: b.entry },
        models: { m: fallback(['a', 'model-a'], ['b', 'model-b']) },
        policy: { maxAttempts: 1 },
      },
      { retryBudgets },
    )
    const res = await post('1')
    expect(res.status).toBe(200)
    expect(res.headers.get('x-hourglass-provider')).toBe('b')
    expect(a.fake.requests).toHaveLength(0)
    // Charged where it went (and refunded: it was answered).
    expect(retryBudgets.forProvider({ name: 'b', baseURL: b.fake.baseURL }).tokens).toBe(2)
    const page = await (await fetch(`${harness.url}/metrics`)).text()
    expect(page).toMatch(
      /hourglass_gateway_client_retries_total\{provider="b",outcome="admitted"\} 1/,
    )
  })

  it('the official client’s own retry is seen: its second attempt carries X-Stainless-Retry-Count: 1 and is charged', async () => {
    const p = await fakeProvider('openai', ['k'])
    fakes.push(p.fake)
    // The provider fails once with a retryable 500: the gateway answers 502 (no attempt left), the SDK retries.
    p.fake.enqueue(openAIErrors.serverError({ status: 500 }), reply.text('second time'))
    const retryBudgets = new RetryBudgetRegistry({ maxTokens: 10 })
    harness = await startHarness(
      {
        providers: { p: p.entry },
        models: { m: fallback(['p', 'gpt']) },
        policy: { maxAttempts: 1 },
      },
      { retryBudgets },
    )
    const client = new OpenAI({ baseURL: `${harness.url}/v1`, apiKey: 'x', maxRetries: 1 })
    const completion = await client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'x' }],
    })
    expect(completion.choices[0]?.message.content).toBe('second time')
    expect(p.fake.requests).toHaveLength(2)
    // The provider's 500 (a retryable failure): 1 token; the client's retry
    // was charged one and, answered, refunded it; one success back.
    expect(retryBudgets.forProvider({ name: 'p', baseURL: p.fake.baseURL }).tokens).toBeCloseTo(9.1)
    const lines = harness.logs.filter((l) => l.event === 'request')
    expect(lines.map((l) => l['status'])).toEqual([502, 200])
  })
})
