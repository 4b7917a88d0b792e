import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import {
  createGateway,
  GatewayConfigError,
  isGatewayConfigError,
  loadGatewayConfig,
  parseGatewayConfig,
} from '../src/index.js'

const valid = () => ({
  providers: {
    openai: {
      dialect: 'openai',
      baseURL: 'https://api.openai.com/v1',
      apiKeys: ['sk-one', 'sk-two'],
    },
    qwen: {
      dialect: 'qwen',
      baseURL: 'https://dashscope.aliyuncs.com/compatible-mode/v1',
      apiKeys: ['qk-one'],
      limits: { rpm: 60, tpm: 100_000 },
      prices: { 'qwen-plus': { inputPerMTok: 0.4, outputPerMTok: 1.2 } },
    },
  },
  models: {
    small: { fallback: [{ provider: 'qwen', model: 'qwen-plus' }] },
    large: {
      fallback: [
        { provider: 'openai', model: 'gpt-4o' },
        { provider: 'qwen', model: 'qwen-max' },
      ],
    },
    auto: { route: { small: 'small', large: 'large', maxSmallPromptTokens: 500 } },
  },
  aliases: { 'gpt-4o-mini': 'small' },
})

/** The problems a config has, as `field: message` lines. */
function problems(input: unknown, env: Record<string, string> = {}): string[] {
  try {
    parseGatewayConfig(input, { env })
  } catch (error) {
    if (!isGatewayConfigError(error)) throw error
    return error.problems.map((p) => `${p.field}: ${p.message}`)
  }
  return []
}

describe('gateway config validation names the field', () => {
  it('accepts a valid config and fills in the documented defaults', () => {
    const config = parseGatewayConfig(valid())
    // reserveMs is left to @hourglass/express's adaptive default.
    expect(config.deadline).toEqual({ defaultMs: 60_000, maxMs: 300_000 })
    expect(config.policy).toMatchObject({
      maxAttempts: 2,
      max529Retries: 1,
      priority: 'foreground',
    })
    expect(config.limits).toEqual({ windowMs: 60_000, instances: 1 })
    expect(config.models['auto']?.route).toEqual({
      small: 'small',
      large: 'large',
      maxSmallPromptTokens: 500,
      largeWhenTools: true,
    })
  })

  it('an empty key is reported at its index', () => {
    const input = valid()
    input.providers.qwen.apiKeys = ['qk-one', '']
    expect(problems(input)).toEqual(['providers.qwen.apiKeys[1]: expected a non-empty string'])
  })

  it('a misspelt field is named as unknown, at its full path', () => {
    const input = valid() as Record<string, unknown>
    const openai = (input['providers'] as Record<string, Record<string, unknown>>)['openai']!
    openai['baseUrl'] = openai['baseURL']
    delete openai['baseURL']
    expect(problems(input)).toEqual([
      'providers.openai.baseURL: expected an http(s) URL',
      'providers.openai.baseUrl: unknown field (check the spelling)',
    ])
  })

  it('an unknown dialect, provider, route target and alias target are each named', () => {
    const input = valid() as ReturnType<typeof valid> & Record<string, unknown>
    ;(input.providers.openai as Record<string, unknown>)['dialect'] = 'openia'
    expect(problems(input)).toEqual([
      'providers.openai.dialect: expected one of openai, deepseek, qwen, ernie, doubao, anthropic, gemini',
    ])
    const second = valid()
    second.models.large.fallback[1] = { provider: 'qwne', model: 'qwen-max' }
    ;(second.models.auto.route as Record<string, unknown>)['large'] = 'huge'
    ;(second.aliases as Record<string, string>)['gpt-4'] = 'nope'
    expect(problems(second)).toEqual([
      'models.large.fallback[1].provider: unknown provider "qwne" (known: openai, qwen)',
      'models.auto.route.large: unknown model "huge"',
      'aliases.gpt-4: unknown model "nope"',
    ])
  })

  it('keys can come from the environment; a missing variable is named at the key', () => {
    const input = valid() as unknown as { providers: { openai: { apiKeys: unknown[] } } }
    input.providers.openai.apiKeys = [{ env: 'OPENAI_KEY_1' }, { env: 'OPENAI_KEY_2' }]
    expect(problems(input, { OPENAI_KEY_1: 'sk-from-env' })).toEqual([
      'providers.openai.apiKeys[1]: environment variable OPENAI_KEY_2 is not set',
    ])
    const config = parseGatewayConfig(input, {
      env: { OPENAI_KEY_1: 'a-key-1', OPENAI_KEY_2: 'a-key-2' },
    })
    expect(config.providers['openai']?.apiKeys).toEqual(['a-key-1', 'a-key-2'])
  })

  it('a cost budget needs a price for every model it may call', () => {
    const input = { ...valid(), policy: { maxCostUsdPerRequest: 0.05 } }
    expect(problems(input)).toEqual([
      'models.large.fallback[0].model: no price for "gpt-4o" in providers.openai.prices (policy.maxCostUsdPerRequest needs one)',
      'models.large.fallback[1].model: no price for "qwen-max" in providers.qwen.prices (policy.maxCostUsdPerRequest needs one)',
    ])
  })

  it('the error message lists every problem and never quotes a key back', () => {
    const input = valid() as unknown as { providers: { openai: Record<string, unknown> } }
    input.providers.openai['apiKeys'] = ['sk-secret-value-123', 42]
    input.providers.openai['limits'] = { rpm: -1 }
    let error: unknown
    try {
      createGateway(input)
    } catch (e) {
      error = e
    }
    expect(error).toBeInstanceOf(GatewayConfigError)
    const message = (error as Error).message
    expect(message).toContain(
      'providers.openai.apiKeys[1]: expected a non-empty string or { "env": NAME }',
    )
    expect(message).toContain('providers.openai.limits.rpm: expected 0 or more')
    expect(message).not.toContain('sk-secret-value-123')
  })
})

describe('loadGatewayConfig', () => {
  let dir: string | undefined
  afterEach(async () => {
    if (dir) await rm(dir, { recursive: true, force: true })
    dir = undefined
  })

  it('reads and validates a JSON file', async () => {
    dir = await mkdtemp(join(tmpdir(), 'gateway-config-'))
    const file = join(dir, 'gateway.json')
    await writeFile(file, JSON.stringify(valid()))
    const config = await loadGatewayConfig(file)
    expect(Object.keys(config.models)).toEqual(['small', 'large', 'auto'])
  })

  it('a JSON syntax error says where, not what (the text around it may be a key)', async () => {
    dir = await mkdtemp(join(tmpdir(), 'gateway-config-'))
    const file = join(dir, 'gateway.json')
    await writeFile(file, '{"providers": {"x": {"apiKeys": ["sk-do-not-print-me"] ,,}}}')
    const error = await loadGatewayConfig(file).catch((e: unknown) => e)
    expect(isGatewayConfigError(error)).toBe(true)
    expect((error as GatewayConfigError).problems[0]?.field).toBe('(json)')
    expect((error as Error).message).toContain(file)
    expect((error as Error).message).not.toContain('sk-do-not-print-me')
  })

  it('a missing file is a config error naming the file', async () => {
    const error = await loadGatewayConfig('/nonexistent/gateway.json').catch((e: unknown) => e)
    expect((error as GatewayConfigError).problems).toEqual([
      { field: '(file)', message: 'cannot read it (ENOENT)' },
    ])
  })
})
