import { describe, expect, it } from 'vitest'
import { parseGatewayConfig } from '../src/index.js'
import { configProblems as problems } from './support/configProblems.js'

const withModels = (...models: unknown[]) => ({
  providers: { p: { dialect: 'gemini', baseURL: 'https://example.test', apiKeys: ['k'] } },
  models: Object.fromEntries(
    models.map((model, i) => [`m${i}`, { fallback: [{ provider: 'p', model }] }]),
  ),
})

describe('an upstream model name with spaces or a line break at either end', () => {
  it('is refused at its field, from the environment or written, never quoted', () => {
    // Accepted before: `M='gemini-x\n'` asked Gemini for /v1beta/models/gemini-x%0A on every request.
    const message =
      'expected no spaces or line breaks at either end (a trailing newline from a file or `echo`, usually): the model name is sent as it is'
    expect(
      problems(
        withModels({ env: 'M' }, { env: 'N' }, 'gemini-y ', 'gemini-fine', 'with inner space'),
        {
          M: 'gemini-x\n',
          N: ' gemini-x',
        },
      ),
    ).toEqual([
      `models.m0.fallback[0].model: ${message}`,
      `models.m1.fallback[0].model: ${message}`,
      `models.m2.fallback[0].model: ${message}`,
    ])
  })

  it('a name without them is taken as it is', () => {
    const config = parseGatewayConfig(withModels({ env: 'M' }), { env: { M: 'gemini-x' } })
    expect(config.models['m0']?.fallback?.[0]?.model).toBe('gemini-x')
  })
})

describe('per-attempt limits in the config', () => {
  const config = (provider: Record<string, unknown>, policy: Record<string, unknown>) => ({
    providers: {
      p: { dialect: 'openai', baseURL: 'https://example.test/v1', apiKeys: ['k'], ...provider },
    },
    models: { m: { fallback: [{ provider: 'p', model: 'x' }] } },
    policy,
  })

  it('headersTimeoutMs and policy.firstTokenTimeoutMs are read', () => {
    const parsed = parseGatewayConfig(
      config({ headersTimeoutMs: 30_000 }, { firstTokenTimeoutMs: 0 }),
    )
    expect(parsed.providers['p']?.headersTimeoutMs).toBe(30_000)
    expect(parsed.policy.firstTokenTimeoutMs).toBe(0)
  })

  it('a headersTimeoutMs of 0 or a fraction, a negative firstTokenTimeoutMs, are refused at their field', () => {
    expect(problems(config({ headersTimeoutMs: 0 }, { firstTokenTimeoutMs: -1 }))).toEqual([
      'providers.p.headersTimeoutMs: expected more than 0 ms',
      'policy.firstTokenTimeoutMs: expected 0 or more',
    ])
    expect(problems(config({ headersTimeoutMs: 1.5 }, {}))).toEqual([
      'providers.p.headersTimeoutMs: expected a whole number of ms',
    ])
  })
})
