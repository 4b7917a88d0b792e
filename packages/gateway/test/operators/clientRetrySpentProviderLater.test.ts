import { RetryBudgetRegistry } from '@hourglass/llm'
import { type FakeProvider, openAIErrors } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from '../support/harness.js'

/**
 * A client's retry (`X-Stainless-Retry-Count > 0`) meeting a provider whose
 * retry budget is spent leaves that provider out of the request — also where
 * the list names it again further down (a smaller model of it as the last
 * fallback). Only the models before the admitted one were left out: the
 * retry reached the failing provider through its later model, and its 500
 * made the charge stand on the provider admitted instead.
 */
describe('a client retry never reaches a spent provider through a later model of it', () => {
  let fakes: FakeProvider[] = []
  let harness: Harness | undefined
  afterEach(async () => {
    await harness?.close()
    await Promise.all(fakes.map((f) => f.close()))
    fakes = []
    harness = undefined
  })

  /**
   * Providers a and b, both answering 500, a's retry budget (2 tokens) at
   * half; one client retry (`x-stainless-retry-count: 1`) to model `m`,
   * whose list is `targets`, one attempt per model.
   */
  async function clientRetry(targets: Array<[string, string]>) {
    const a = await fakeProvider('openai', ['ka'])
    const b = await fakeProvider('qwen', ['kb'])
    fakes.push(a.fake, b.fake)
    a.fake.setReply(openAIErrors.serverError({ status: 500 }))
    b.fake.setReply(openAIErrors.serverError({ status: 500 }))
    const retryBudgets = new RetryBudgetRegistry({ maxTokens: 2 })
    // a at half: it allows no retry.
    retryBudgets.forProvider({ name: 'a', baseURL: a.fake.baseURL }).recordFailure()
    harness = await startHarness(
      {
        providers: { a: a.entry, b: b.entry },
        models: { m: fallback(...targets) },
        policy: { maxAttempts: 1 },
      },
      { retryBudgets },
    )
    const res = await fetch(`${harness.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-stainless-retry-count': '1' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x' }] }),
    })
    return { a, b, retryBudgets, url: harness.url, res }
  }

  it('[a/large, b/large, a/small] with a spent: b only, a asked nothing', async () => {
    const { a, b, retryBudgets, url, res } = await clientRetry([
      ['a', 'a-large'],
      ['b', 'b-large'],
      ['a', 'a-small'],
    ])
    const budgetOf = (name: string, baseURL: string) => retryBudgets.forProvider({ name, baseURL })
    expect(res.status).toBe(502)
    await res.text()
    expect(b.fake.requests).toHaveLength(1)
    expect(a.fake.requests).toHaveLength(0)
    expect(budgetOf('a', a.fake.baseURL).tokens).toBe(1)
    const page = await (await fetch(`${url}/metrics`)).text()
    expect(page).toMatch(
      /hourglass_gateway_client_retries_total\{provider="a",outcome="refused"\} 1/,
    )
    expect(page).toMatch(
      /hourglass_gateway_client_retries_total\{provider="b",outcome="admitted"\} 1/,
    )
    expect(page).not.toMatch(/hourglass_gateway_upstream_attempts_total\{provider="a"/)
  })

  it('[b, a] with a spent: a is not the fallback of a client retry that b fails', async () => {
    const { a, b, res } = await clientRetry([
      ['b', 'b-large'],
      ['a', 'a-large'],
    ])
    expect(res.status).toBe(502)
    await res.text()
    expect(b.fake.requests).toHaveLength(1)
    expect(a.fake.requests).toHaveLength(0)
  })
})
