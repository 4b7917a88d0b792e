import { type FakeProvider, reply } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { driveOne, WaitClock } from '../../llm/test/support/waitClock.js'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

/**
 * `policy.maxCostUsdPerRequest` bounds what a request can cost before it is
 * sent: the fields that raise the bill beyond the configured prices are
 * refused under it, and each attempt is checked and charged at the price of
 * the provider it goes to.
 */
describe('the per-request cost bound bounds the bill', () => {
  let fakes: FakeProvider[] = []
  let harness: Harness | undefined
  afterEach(async () => {
    await harness?.close()
    await Promise.all(fakes.map((f) => f.close()))
    fakes = []
    harness = undefined
  })

  const ask = { model: 'm', messages: [{ role: 'user' as const, content: 'hi' }], max_tokens: 1000 }
  const requestLine = () => harness!.logs.find((l) => l.event === 'request')

  async function onePriced(policy: Record<string, unknown>) {
    const p = await fakeProvider('openai', ['sk-cost-key-0001'], {
      prices: { 'gpt-5': { inputPerMTok: 1.25, outputPerMTok: 10 } },
    })
    fakes.push(p.fake)
    harness = await startHarness({
      providers: { p: p.entry },
      models: { m: fallback(['p', 'gpt-5']) },
      policy,
    })
    return p.fake
  }

  it('refuses service_tier "priority" (billed at about twice the price) and web_search_options (billed per search) under the bound: 400 naming the field, nothing sent', async () => {
    const fake = await onePriced({ maxCostUsdPerRequest: 0.011 })
    for (const [field, value] of [
      ['service_tier', 'priority'],
      ['web_search_options', {}],
    ] as const) {
      const error = await harness!.client.chat.completions
        .create({ ...ask, [field]: value } as never)
        .then(
          () => undefined,
          (e: unknown) => e,
        )
      expect(error).toMatchObject({ status: 400, code: 'invalid_request', param: field })
      expect((error as Error).message).toContain('policy.maxCostUsdPerRequest')
    }
    expect(fake.requests).toHaveLength(0)
    // The tiers the price table does bound go as sent.
    fake.enqueue(reply.text('ok'))
    await harness!.client.chat.completions.create({ ...ask, service_tier: 'flex' })
    expect(fake.requests[0]?.body).toMatchObject({ service_tier: 'flex' })
  })

  it("a plain turn's reasoning_content pushed back, sent to no provider, is not counted against the bound", async () => {
    // 16,000 characters of reasoning an earlier answer carried: counted,
    // ~4,000 tokens more made this ~$0.0100 request cost $0.015, a 402.
    const fake = await onePriced({ maxCostUsdPerRequest: 0.011 })
    fake.enqueue(reply.text('ok'))
    const answer = await harness!.client.chat.completions.create({
      ...ask,
      messages: [
        { role: 'user', content: 'hi' },
        {
          role: 'assistant',
          content: 'hello',
          reasoning_content: 'thought '.repeat(2000),
        } as { role: 'assistant'; content: string },
        { role: 'user', content: 'and then?' },
      ],
    })
    expect(answer.choices[0]?.message.content).toBe('ok')
    expect(JSON.stringify(fake.requests[0]?.body)).not.toContain('thought')
  })

  it('a fallback the bound cannot afford after the first model failed: 402, saying the earlier attempts were sent', async () => {
    const cheap = await fakeProvider('openai', ['sk-cost-key-0002'], {
      prices: { 'gpt-5-mini': { inputPerMTok: 0.25, outputPerMTok: 2 } },
    })
    const dear = await fakeProvider('openai', ['sk-cost-key-0003'], {
      prices: { 'gpt-5': { inputPerMTok: 1.25, outputPerMTok: 100 } },
    })
    fakes.push(cheap.fake, dear.fake)
    // The back-off after an overload (5–10 s with no server hint) runs on
    // this clock, moved to its end once the request is held by it alone:
    // the same attempts and decisions, without the seconds waited out.
    const clock = new WaitClock()
    harness = await startHarness(
      {
        providers: { cheap: cheap.entry, dear: dear.entry },
        models: { m: fallback(['cheap', 'gpt-5-mini'], ['dear', 'gpt-5']) },
        // 1000 output tokens: $0.002 on the first, $0.1 on the second.
        policy: { maxCostUsdPerRequest: 0.05 },
      },
      { clock },
    )
    for (let i = 0; i < 5; i++) {
      cheap.fake.enqueue(
        reply.error(503, { error: { message: 'overloaded', type: 'server_error' } }),
      )
    }
    const refused = await driveOne(
      clock,
      harness.client.chat.completions.create(ask).catch((e: unknown) => e),
    )
    expect(refused).toMatchObject({ status: 402, code: 'budget_exceeded' })
    expect(cheap.fake.requests.length).toBeGreaterThan(0)
    expect(dear.fake.requests).toHaveLength(0)
    expect((refused as Error).message).not.toContain('nothing was sent')
    expect((refused as Error).message).toContain('sent before')
  })

  it('counts a response_format schema as prompt: "hi" with a 400 kB schema (~100k input tokens) does not pass a $0.011 bound as a 6-token prompt', async () => {
    const fake = await onePriced({ maxCostUsdPerRequest: 0.011 })
    const schema = { type: 'object', description: 'x'.repeat(400_000) }
    const error = await harness!.client.chat.completions
      .create({
        ...ask,
        response_format: { type: 'json_schema', json_schema: { name: 's', schema } },
      })
      .catch((e: unknown) => e)
    expect(error).toMatchObject({ status: 402, code: 'budget_exceeded' })
    expect(fake.requests).toHaveLength(0)
  })

  it('a model whose reasoning is billed beyond max_tokens (uncappedReasoningTokens) is checked with it before sending', async () => {
    const p = await fakeProvider('deepseek', ['sk-cost-key-0001'], {
      prices: {
        'deepseek-reasoner': {
          inputPerMTok: 1,
          outputPerMTok: 2,
          cachedInputPerMTok: 0.1,
          uncappedReasoningTokens: 32_000,
        },
      },
    })
    fakes.push(p.fake)
    harness = await startHarness({
      providers: { p: p.entry },
      models: { m: fallback(['p', 'deepseek-reasoner']) },
      // 1000 output tokens ($0.002) fit; 33 000 ($0.066) do not.
      policy: { maxCostUsdPerRequest: 0.01 },
    })
    const refused = await harness.client.chat.completions.create(ask).catch((e: unknown) => e)
    expect(refused).toMatchObject({ status: 402, code: 'budget_exceeded' })
    expect(p.fake.requests).toHaveLength(0)
  })

  it('a prediction (Predicted Outputs: rejected predicted tokens are billed as output, beyond max_tokens) is checked at the output price: 400 predicted tokens do not pass a $0.011 bound beside a $0.01 cap', async () => {
    const fake = await onePriced({ maxCostUsdPerRequest: 0.011 })
    // ~400 tokens: $0.0005 at the input price (which passed: $0.0105 in
    // all), $0.004 at the output price, as OpenAI bills the rejected ones.
    const prediction = { type: 'content' as const, content: 'x'.repeat(1600) }
    const refused = await harness!.client.chat.completions
      .create({ ...ask, prediction })
      .catch((e: unknown) => e)
    expect(refused).toMatchObject({ status: 402, code: 'budget_exceeded' })
    expect(fake.requests).toHaveLength(0)
    // Within the bound (a smaller cap), it goes as sent.
    fake.enqueue(reply.text('ok'))
    await harness!.client.chat.completions.create({ ...ask, max_tokens: 500, prediction })
    expect(fake.requests[0]?.body).toMatchObject({ prediction })
  })

  it('without the bound, service_tier "priority" is forwarded as sent', async () => {
    const fake = await onePriced({})
    fake.enqueue(reply.text('ok'))
    await harness!.client.chat.completions.create({ ...ask, service_tier: 'priority' })
    expect(fake.requests[0]?.body).toMatchObject({ service_tier: 'priority' })
  })

  it('one model name priced differently by two providers: each request checked and charged at its provider’s price, not the last one configured', async () => {
    const usage = { inputTokens: 1000, outputTokens: 1000 }
    const dear = await fakeProvider('openai', ['sk-cost-key-0001'], {
      prices: { 'gpt-4o': { inputPerMTok: 2, outputPerMTok: 8 } },
    })
    const cheap = await fakeProvider('openai', ['sk-cost-key-0002'], {
      prices: { 'gpt-4o': { inputPerMTok: 0.1, outputPerMTok: 0.1 } },
    })
    fakes.push(dear.fake, cheap.fake)
    harness = await startHarness({
      providers: { dear: dear.entry, cheap: cheap.entry },
      models: { m: fallback(['dear', 'gpt-4o']), n: fallback(['cheap', 'gpt-4o']) },
      policy: { maxCostUsdPerRequest: 0.02 },
    })
    dear.fake.enqueue(reply.text('ok', { usage }))
    cheap.fake.enqueue(reply.text('ok', { usage }))
    await harness.client.chat.completions.create(ask)
    await harness.client.chat.completions.create({ ...ask, model: 'n' })
    const costs = harness.logs.filter((l) => l.event === 'request').map((l) => l['costUsd'])
    // 1000 × $2 + 1000 × $8 per million; 1000 × $0.1 + 1000 × $0.1.
    expect(costs[0]).toBeCloseTo(0.01, 12)
    expect(costs[1]).toBeCloseTo(0.0002, 12)
    // The check before sending, too: 1000 output tokens at the dear price
    // ($0.008…) do not fit $0.005; at the cheap price they would have.
    await harness.close()
    harness = await startHarness({
      providers: { dear: dear.entry, cheap: cheap.entry },
      models: { m: fallback(['dear', 'gpt-4o']) },
      policy: { maxCostUsdPerRequest: 0.005 },
    })
    const refused = await harness.client.chat.completions.create(ask).catch((e: unknown) => e)
    expect(refused).toMatchObject({ status: 402 })
    expect(requestLine()).toMatchObject({ status: 402 })
    expect(dear.fake.requests).toHaveLength(1)
  })
})
