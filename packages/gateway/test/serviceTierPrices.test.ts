import { type FakeProvider, reply } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { isGatewayConfigError, parseGatewayConfig } from '../src/index.js'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

/**
 * A price may list the model's service tiers (`serviceTiers`, llm's
 * `ModelPrice.serviceTiers`). Under `policy.maxCostUsdPerRequest` a request
 * is checked at the tier it may be billed at — the one it names; for `auto`
 * or none, the dearest listed (the project's tier may be priority) — and
 * charged at the tier that served it; a tier no price covers is refused.
 */
describe('service tiers are priced under the cost bound', () => {
  let fake: FakeProvider | undefined
  let harness: Harness | undefined
  afterEach(async () => {
    await harness?.close()
    await fake?.close()
    harness = undefined
    fake = undefined
  })

  // GPT-5's standard and priority prices.
  const STANDARD = { inputPerMTok: 1.25, outputPerMTok: 10 }
  const PRIORITY = { inputPerMTok: 2.5, outputPerMTok: 20 }
  const ask = { model: 'm', messages: [{ role: 'user' as const, content: 'hi' }], max_tokens: 1000 }
  const requestLine = () => harness!.logs.filter((l) => l.event === 'request').at(-1)

  async function start(price: Record<string, unknown>, maxCostUsdPerRequest: number) {
    const p = await fakeProvider('openai', ['sk-tier-key-0001'], { prices: { 'gpt-5': price } })
    fake = p.fake
    harness = await startHarness({
      providers: { p: p.entry },
      models: { m: fallback(['p', 'gpt-5']) },
      policy: { maxCostUsdPerRequest },
    })
  }

  const outcome = (body: Record<string, unknown>) =>
    harness!.client.chat.completions.create(body as never).then(
      () => 200,
      (e: unknown) => e as { status: number; code: string; param: string | null; message: string },
    )

  it('a tier the price lists goes as sent, checked at its own price: 1000 output tokens of priority ($0.02) do not fit $0.011, 500 do', async () => {
    await start({ ...STANDARD, serviceTiers: { priority: PRIORITY } }, 0.011)
    expect(await outcome({ ...ask, service_tier: 'priority' })).toMatchObject({
      status: 402,
      code: 'budget_exceeded',
    })
    expect(fake!.requests).toHaveLength(0)
    fake!.enqueue(reply.text('ok'))
    expect(await outcome({ ...ask, max_tokens: 500, service_tier: 'priority' })).toBe(200)
    expect(fake!.requests[0]?.body).toMatchObject({ service_tier: 'priority' })
  })

  it('auto, and no service_tier, are held at the dearest tier listed (the project’s own may be priority); default at the standard price', async () => {
    await start({ ...STANDARD, serviceTiers: { priority: PRIORITY } }, 0.011)
    for (const body of [ask, { ...ask, service_tier: 'auto' }]) {
      expect(await outcome(body), JSON.stringify(body)).toMatchObject({
        status: 402,
        code: 'budget_exceeded',
      })
    }
    expect(fake!.requests).toHaveLength(0)
    fake!.enqueue(reply.text('ok'))
    expect(await outcome({ ...ask, service_tier: 'default' })).toBe(200)
    expect(fake!.requests).toHaveLength(1)
  })

  it('a tier no price covers (priority unlisted, a name llm does not know) is refused naming the provider and where its price goes; nothing sent', async () => {
    await start(STANDARD, 1)
    for (const tier of ['priority', 'turbo']) {
      const error = await outcome({ ...ask, service_tier: tier })
      expect(error, tier).toMatchObject({
        status: 400,
        code: 'invalid_request',
        param: 'service_tier',
      })
      const { message } = error as { message: string }
      expect(message, tier).toContain(`"${tier}" has no price for p/gpt-5`)
      expect(message, tier).toContain('providers.p.prices["gpt-5"].serviceTiers')
    }
    expect(fake!.requests).toHaveLength(0)
    // The tiers billed at no more than the standard price go as sent, and so do auto and none.
    for (const tier of ['default', 'flex', 'scale', 'auto']) {
      fake!.enqueue(reply.text('ok'))
      expect(await outcome({ ...ask, service_tier: tier }), tier).toBe(200)
    }
    expect(fake!.requests.map((r) => (r.body as { service_tier?: string }).service_tier)).toEqual([
      'default',
      'flex',
      'scale',
      'auto',
    ])
  })

  it('an answer is charged at the tier that served it: the request line’s costUsd at priority’s price, or the standard one', async () => {
    await start({ ...STANDARD, serviceTiers: { priority: PRIORITY } }, 1)
    const answer = (tier: string) =>
      reply.error(200, {
        id: 'chatcmpl-tier',
        object: 'chat.completion',
        created: 1,
        model: 'gpt-5',
        service_tier: tier,
        choices: [
          { index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' },
        ],
        usage: { prompt_tokens: 1000, completion_tokens: 1000, total_tokens: 2000 },
      })
    fake!.enqueue(answer('priority'))
    await harness!.client.chat.completions.create(ask)
    // 1000 × $2.50 + 1000 × $20 per million.
    expect(requestLine()?.['costUsd']).toBeCloseTo(0.0225, 12)
    fake!.enqueue(answer('default'))
    await harness!.client.chat.completions.create(ask)
    expect(requestLine()?.['costUsd']).toBeCloseTo(0.01125, 12)
  })

  it('the config checks tier prices by field path', () => {
    const config = (serviceTiers: unknown) => ({
      providers: {
        p: {
          dialect: 'openai',
          baseURL: 'https://api.openai.com/v1',
          prices: { 'gpt-5': { ...STANDARD, serviceTiers } },
        },
      },
      models: { m: fallback(['p', 'gpt-5']) },
    })
    expect(parseGatewayConfig(config({ priority: PRIORITY })).providers['p']?.prices).toEqual({
      'gpt-5': { ...STANDARD, serviceTiers: { priority: PRIORITY } },
    })
    const problems = (() => {
      try {
        parseGatewayConfig(config({ priority: { inputPerMTok: -1, outputPerMtok: 20 } }))
      } catch (error) {
        if (isGatewayConfigError(error)) return error.problems.map((p) => p.field)
        throw error
      }
      return []
    })()
    expect(problems).toEqual(
      expect.arrayContaining([
        'providers.p.prices.gpt-5.serviceTiers.priority.inputPerMTok',
        'providers.p.prices.gpt-5.serviceTiers.priority.outputPerMtok',
      ]),
    )
  })
})
