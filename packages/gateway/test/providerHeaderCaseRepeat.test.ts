import { describe, expect, it } from 'vitest'
import { type GatewayConfigError, parseGatewayConfig } from '../src/index.js'

/**
 * A provider header written twice in another letter case (`X-Org` and
 * `x-org`) is one HTTP header: the config loaded, and the upstream got one of
 * the two values, the other dropped without a word (with no `apiKeys`, one
 * of two `Authorization` credentials) — what the duplicate-key check refuses
 * for a key written twice with the same spelling.
 */
describe('a provider header repeated in another letter case', () => {
  const config = (headers: Record<string, string>, apiKeys: string[] = ['k']) => ({
    providers: { p: { dialect: 'openai', baseURL: 'http://127.0.0.1:9/v1', apiKeys, headers } },
    models: { m: { fallback: [{ provider: 'p', model: 'x' }] } },
  })
  const problemsOf = (input: unknown) => {
    try {
      parseGatewayConfig(input, { env: {} })
    } catch (error) {
      return (error as GatewayConfigError).problems
    }
    return []
  }

  it('is refused at the second, naming the first', () => {
    expect(problemsOf(config({ 'X-Org': 'a', 'x-org': 'b' }))).toEqual([
      {
        field: 'providers.p.headers.x-org',
        message:
          'repeats headers["X-Org"]: header names are one in any letter case, and only one of the two values would be sent (keep one)',
      },
    ])
  })

  it('the credential header without apiKeys too', () => {
    expect(
      problemsOf(config({ Authorization: 'Bearer a', authorization: 'Bearer b' }, [])),
    ).toEqual([
      {
        field: 'providers.p.headers.authorization',
        message:
          'repeats headers["Authorization"]: header names are one in any letter case, and only one of the two values would be sent (keep one)',
      },
    ])
  })

  it('different headers load', () => {
    expect(problemsOf(config({ 'X-Org': 'a', 'X-Team': 'b' }))).toEqual([])
  })
})
