import { describe, expect, it } from 'vitest'
import { isGatewayConfigError, parseGatewayConfig } from '../src/index.js'

/**
 * `policy.maxCostUsdPerRequest: 0` — "off", as a 0 means for the ms
 * options — loaded, and then refused every request with 402
 * `budget_exceeded`, "the request would exceed its cost budget", blaming
 * the client. Refused at load, at its field; leaving it out is no budget.
 */
describe('a cost budget of 0 is refused at load, not answered 402 at every request', () => {
  const config = (policy: Record<string, unknown>) => ({
    providers: {
      a: {
        dialect: 'openai',
        baseURL: 'http://127.0.0.1:9/v1',
        apiKeys: ['sk-test-1234'],
        prices: { x: { inputPerMTok: 1, outputPerMTok: 2 } },
      },
    },
    models: { m: { fallback: [{ provider: 'a', model: 'x' }] } },
    policy,
  })

  it('maxCostUsdPerRequest: 0 names its field and says to leave it out', () => {
    let error: unknown
    try {
      parseGatewayConfig(config({ maxCostUsdPerRequest: 0 }))
    } catch (e) {
      error = e
    }
    expect(isGatewayConfigError(error)).toBe(true)
    expect((error as { problems: unknown }).problems).toEqual([
      {
        field: 'policy.maxCostUsdPerRequest',
        message:
          'expected an amount above 0 USD: a budget of 0 refuses every request (leave the field out for no cost budget)',
      },
    ])
  })

  it('a budget above 0, or none, loads', () => {
    expect(
      parseGatewayConfig(config({ maxCostUsdPerRequest: 0.01 })).policy.maxCostUsdPerRequest,
    ).toBe(0.01)
    expect(parseGatewayConfig(config({})).policy.maxCostUsdPerRequest).toBeUndefined()
  })
})
