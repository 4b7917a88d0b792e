import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { type AddressInfo, createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { reply } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import {
  createGateway,
  GatewayConfigError,
  isGatewayConfigError,
  loadGatewayConfig,
  parseGatewayConfig,
} from '../src/index.js'
import { configProblems as problems } from './support/configProblems.js'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

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

/** The `code` of what `make` throws. */
function optionErrorCode(make: () => unknown): unknown {
  try {
    make()
  } catch (error) {
    return (error as { code?: unknown }).code
  }
  return undefined
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
      'providers.openai.baseURL: required (expected an http(s) URL)',
      'providers.openai.baseUrl: unknown field (check the spelling)',
    ])
  })

  it('a baseURL with a user or password, a query or a fragment is refused at its field, never quoted (the password was dropped, the query swallowed the path)', () => {
    const USERINFO =
      'providers.openai.baseURL: expected no user or password in the URL: they are not sent (the provider answers 401 and the keys are retired); put a credential in apiKeys or headers'
    const QUERY =
      'providers.openai.baseURL: expected no query string or fragment: the request path is appended to baseURL, so it would land inside them'
    const withBase = (baseURL: unknown) => {
      const input = valid() as { providers: { openai: { baseURL: unknown } } }
      input.providers.openai.baseURL = baseURL
      return input
    }
    expect(problems(withBase('https://proxy:s3cret-pass@llm.internal/v1'))).toEqual([USERINFO])
    expect(problems(withBase('https://proxy@llm.internal/v1'))).toEqual([USERINFO])
    expect(problems(withBase('https://x.openai.azure.com/v1?api-version=2024-06-01'))).toEqual([
      QUERY,
    ])
    expect(problems(withBase('https://api.openai.com/v1?'))).toEqual([QUERY])
    expect(problems(withBase('https://api.openai.com/v1#chat'))).toEqual([QUERY])
    // From the environment, validated like a literal; the value is never quoted back.
    const fromEnv = problems(withBase({ env: 'BASE' }), { BASE: 'https://u:s3cret-pass@h/v1?a=1' })
    expect(fromEnv).toEqual([USERINFO, QUERY])
    expect(JSON.stringify(fromEnv)).not.toContain('s3cret-pass')
    // A trailing slash, a port and a path stay fine.
    expect(problems(withBase('http://127.0.0.1:8080/compatible-mode/v1/'))).toEqual([])
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

  it('a name holding a line break or control character is quoted back escaped: each problem stays one line (no forged line in the error or the log)', () => {
    const input = valid() as unknown as {
      providers: { openai: { apiKeys: unknown[] } }
      models: { large: { fallback: Array<{ provider: string; model: string }> } }
      aliases: Record<string, string>
    }
    input.models.large.fallback[1] = { provider: 'qwen\nERROR forged line', model: 'qwen-max' }
    input.aliases['gpt-4'] = 'small\u001b[2K\u202e'
    input.providers.openai.apiKeys = [{ env: 'OPENAI_KEY\n' }]
    const lines = problems(input)
    expect(lines).toEqual([
      'providers.openai.apiKeys[0]: environment variable OPENAI_KEY\\n is not set',
      'models.large.fallback[1].provider: unknown provider "qwen\\nERROR forged line" (known: openai, qwen)',
      'aliases.gpt-4: unknown model "small\\u001b[2K\\u202e"',
    ])
    // The error's message, one line per problem (plus its heading).
    let message = ''
    try {
      parseGatewayConfig(input, { env: {} })
    } catch (error) {
      message = (error as Error).message
    }
    expect(message.split('\n')).toHaveLength(1 + lines.length)
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

  it('a variable set to the empty string is reported as empty, not as not set', () => {
    const input = valid() as unknown as {
      providers: { openai: { apiKeys: unknown[] } }
      models: { small: { fallback: Array<{ provider: string; model: unknown }> } }
    }
    input.providers.openai.apiKeys = [{ env: 'OPENAI_KEY_EMPTY' }, { env: 'OPENAI_KEY_UNSET' }]
    input.models.small.fallback[0]!.model = { env: 'SMALL_MODEL' }
    expect(problems(input, { OPENAI_KEY_EMPTY: '', SMALL_MODEL: '' })).toEqual([
      'providers.openai.apiKeys[0]: environment variable OPENAI_KEY_EMPTY is empty',
      'providers.openai.apiKeys[1]: environment variable OPENAI_KEY_UNSET is not set',
      'models.small.fallback[0].model: environment variable SMALL_MODEL is empty',
    ])
  })

  it('the same env object checked twice reads its variables again each time (a reload sees a changed key)', () => {
    const input = valid() as unknown as {
      providers: { openai: { apiKeys: unknown[] } }
      aliases?: unknown
    }
    input.providers.openai.apiKeys = [{ env: 'ROTATED_KEY' }]
    delete input.aliases
    const env: Record<string, string | undefined> = { ROTATED_KEY: 'sk-before' }
    expect(parseGatewayConfig(input, { env }).providers['openai']?.apiKeys).toEqual(['sk-before'])
    env['ROTATED_KEY'] = 'sk-after'
    expect(parseGatewayConfig(input, { env }).providers['openai']?.apiKeys).toEqual(['sk-after'])
    delete env['ROTATED_KEY']
    expect(problems(input, env as Record<string, string>)).toEqual([
      'providers.openai.apiKeys[0]: environment variable ROTATED_KEY is not set',
    ])
    // Defaults are fresh objects: changing one parsed config leaves the next alone.
    env['ROTATED_KEY'] = 'sk-again'
    const first = parseGatewayConfig(input, { env })
    ;(first.aliases as Record<string, string>)['mutated'] = 'x'
    expect(parseGatewayConfig(input, { env }).aliases).not.toHaveProperty('mutated')
  })

  it("the README's bad config is refused in one run with every problem it lists, verbatim", async () => {
    const readme = await readFile(
      join(dirname(fileURLToPath(import.meta.url)), '..', 'README.md'),
      'utf8',
    )
    const section = readme.slice(readme.indexOf('<!-- bad-config:'))
    const config = /```json\n([\s\S]*?)\n```/.exec(section)?.[1]
    const output = /```\n(gateway config gateway\.json is invalid:[\s\S]*?)\n```/.exec(section)?.[1]
    expect(config).toBeDefined()
    expect(output).toBeDefined()
    // A missing env variable, a bad dialect, a misspelt field and an unknown provider, together.
    expect(output).toContain('environment variable QWEN_KEY_2 is not set')
    expect(output).toContain('providers.claude.dialect')
    expect(output).toContain('models.large.fallback[1].provider: unknown provider "qwne"')
    let error: unknown
    try {
      parseGatewayConfig(JSON.parse(config!), {
        file: 'gateway.json',
        env: { QWEN_KEY_1: 'sk-qwen-1', ANTHROPIC_KEY: 'sk-ant-1' },
      })
    } catch (e) {
      error = e
    }
    expect(isGatewayConfigError(error)).toBe(true)
    expect((error as Error).message).toBe(output)
  })

  it('a config with no providers or no models is refused', () => {
    expect(problems({ providers: {}, models: {} })).toEqual([
      'providers: expected at least one entry (no providers, nothing to serve)',
      'models: expected at least one entry (no models, nothing to serve)',
    ])
    const input = valid() as Record<string, unknown>
    input['models'] = {}
    expect(problems(input)).toEqual([
      'models: expected at least one entry (no models, nothing to serve)',
      'aliases.gpt-4o-mini: unknown model "small"',
    ])
  })

  it('every string value may come from the environment, and is then validated like a literal', () => {
    const input = {
      providers: {
        p: {
          dialect: { env: 'GW_DIALECT' },
          baseURL: { env: 'GW_BASE_URL' },
          apiKeys: [{ env: 'GW_KEY' }],
          headers: { 'x-tenant': { env: 'GW_TENANT' } },
        },
      },
      models: { m: { fallback: [{ provider: 'p', model: { env: 'GW_MODEL' } }] } },
      aliases: { 'gpt-4o': { env: 'GW_ALIAS_TARGET' } },
      policy: { priority: { env: 'GW_PRIORITY' } },
      redis: { url: { env: 'GW_REDIS_URL' }, keyPrefix: { env: 'GW_PREFIX' } },
    }
    const env = {
      GW_DIALECT: 'qwen',
      GW_BASE_URL: 'https://dashscope.example/compatible-mode/v1',
      GW_KEY: 'sk-env-key',
      GW_TENANT: 'tenant-7',
      GW_MODEL: 'qwen-plus',
      GW_ALIAS_TARGET: 'm',
      GW_PRIORITY: 'background',
      GW_REDIS_URL: 'redis://:pa55word@10.0.0.5:6379/2',
      GW_PREFIX: 'gw-eu',
    }
    const config = parseGatewayConfig(input, { env })
    expect(config.providers['p']).toEqual({
      dialect: 'qwen',
      baseURL: env.GW_BASE_URL,
      apiKeys: ['sk-env-key'],
      headers: { 'x-tenant': 'tenant-7' },
    })
    expect(config.models['m']?.fallback).toEqual([{ provider: 'p', model: 'qwen-plus' }])
    expect(config.aliases).toEqual({ 'gpt-4o': 'm' })
    expect(config.policy.priority).toBe('background')
    expect(config.redis).toMatchObject({ url: env.GW_REDIS_URL, keyPrefix: 'gw-eu' })

    // Validated after resolving; a missing variable or a malformed { env } is named at its field; no value quoted.
    const bad = {
      ...env,
      GW_BASE_URL: 'ftp://secret-host.example',
      GW_REDIS_URL: 'http://:pa55word@10.0.0.5',
      GW_DIALECT: undefined,
    }
    const withExtra = structuredClone(input) as typeof input & Record<string, unknown>
    ;(withExtra.providers.p.headers as Record<string, unknown>)['x-tenant'] = {
      env: 'GW_TENANT',
      x: 1,
    }
    let error: unknown
    try {
      parseGatewayConfig(withExtra, { env: bad })
    } catch (e) {
      error = e
    }
    expect(isGatewayConfigError(error)).toBe(true)
    expect((error as GatewayConfigError).problems.map((p) => `${p.field}: ${p.message}`)).toEqual([
      'providers.p.dialect: environment variable GW_DIALECT is not set',
      'providers.p.baseURL: expected an http(s) URL',
      'providers.p.headers.x-tenant: expected { "env": NAME } with the name of an environment variable, and nothing else',
      'redis.url: expected a redis:// or rediss:// URL',
    ])
    expect((error as Error).message).not.toMatch(/pa55word|secret-host/)
  })

  it('a redis.url without a host and a fallback list that names a target twice are refused with the rest, at their fields', () => {
    // ioredis dials localhost:6379 for `redis://` (a `redis://${HOST}` whose
    // HOST was empty): every instance its own Redis, or none. A repeated
    // target is asked again after it failed (retries are policy.maxAttempts).
    const input = valid() as ReturnType<typeof valid> & Record<string, unknown>
    input['redis'] = { url: { env: 'GW_REDIS_URL' } }
    input.models.large.fallback.push({ provider: 'openai', model: 'gpt-4o' })
    input.models.small.fallback.push({ provider: 'qwen', model: 'qwen-max' })
    input.models.small.fallback.push({ provider: 'qwen', model: 'qwen-max' })
    ;(input.providers.openai as Record<string, unknown>)['dialect'] = 'openia'
    expect(problems(input, { GW_REDIS_URL: 'redis://' })).toEqual([
      'providers.openai.dialect: expected one of openai, deepseek, qwen, ernie, doubao, anthropic, gemini',
      'redis.url: expected a host (redis://host:port)',
      'models.small.fallback[2]: repeats fallback[1] (provider "qwen", model "qwen-max"): each target is asked once (policy.maxAttempts sets its retries)',
      'models.large.fallback[2]: repeats fallback[0] (provider "openai", model "gpt-4o"): each target is asked once (policy.maxAttempts sets its retries)',
    ])
    // ioredis reads `redis:?host=h` as the host `redis`.
    for (const url of ['redis:?host=10.0.0.5', 'rediss:/?host=10.0.0.5&port=6380']) {
      expect(problems({ ...valid(), redis: { url } })).toEqual([
        'redis.url: expected a redis:// or rediss:// URL',
      ])
    }
    // ioredis keeps the last of a repeated query value.
    for (const url of ['rediss:///0', 'redis://?host=&port=6380', 'redis://?host=10.0.0.5&host=']) {
      expect(problems({ ...valid(), redis: { url } })).toEqual([
        'redis.url: expected a host (redis://host:port)',
      ])
    }
    // The same model at two providers, or two models at one, are two targets.
    const distinct = valid()
    distinct.models.large.fallback.push({ provider: 'qwen', model: 'gpt-4o' })
    expect(problems({ ...distinct, redis: { url: 'redis://10.0.0.5:6379/2' } })).toEqual([])
    // Names may hold `/`: `or` + `a/m` and `or/a` + `m` are two targets.
    const slashes = valid()
    const providers = slashes.providers as Record<string, unknown>
    providers['or'] = providers['qwen']
    providers['or/a'] = providers['qwen']
    slashes.models.large.fallback.push({ provider: 'or', model: 'a/m' })
    slashes.models.large.fallback.push({ provider: 'or/a', model: 'm' })
    // ioredis reads a host, or a Unix socket's path, given in the query as well.
    expect(problems({ ...slashes, redis: { url: 'redis://?host=10.0.0.5' } })).toEqual([])
    expect(problems({ ...valid(), redis: { url: 'redis://?path=/run/redis.sock' } })).toEqual([])
  })

  it(`a \${NAME} written in a value is refused, naming the { "env": NAME } that reads it and nothing else of the value`, () => {
    // As docker-compose or a shell would expand it: nothing here does. The
    // key went out as the text `${OPENAI_KEY}` (every request a 401, the
    // keys retired until restart), the Redis host was `${REDIS_HOST}`.
    const input = valid() as ReturnType<typeof valid> & Record<string, unknown>
    input.providers.openai.apiKeys = [
      `\${OPENAI_KEY}`,
      '$OPENAI_KEY_2',
      // A Compose default is often the real key (or a dev password): the
      // message named the reference whole, and so repeated it.
      `\${OPENAI_KEY:-sk-proj-REALSECRET123}`,
    ]
    input.providers.qwen.baseURL = `https://\${QWEN_HOST:-dashscope.aliyuncs.com}/v1`
    input['redis'] = { url: `redis://:\${REDIS_PASSWORD:-devpass}@\${REDIS_HOST}:6379` }
    const expected = (field: string, name: string) =>
      `${field}: expected a value, not \${${name}}: the config is plain JSON and nothing expands it (it would be sent as written); read the variable with { "env": "${name}" }`
    const found = problems(input)
    expect(found).toEqual([
      expected('providers.openai.apiKeys[0]', 'OPENAI_KEY'),
      expected('providers.openai.apiKeys[1]', 'OPENAI_KEY_2'),
      expected('providers.openai.apiKeys[2]', 'OPENAI_KEY'),
      expected('providers.qwen.baseURL', 'QWEN_HOST'),
      expected('redis.url', 'REDIS_PASSWORD'),
    ])
    expect(found.join('\n')).not.toMatch(/REALSECRET|devpass|dashscope/)
    // The shell's `$` inside { env } names no variable either.
    const named = valid()
    named.providers.openai.apiKeys = [{ env: '$OPENAI_KEY' }] as unknown as string[]
    expect(problems(named, { OPENAI_KEY: 'sk-from-env' })).toEqual([
      'providers.openai.apiKeys[0]: environment variable $OPENAI_KEY is not set (the name goes alone: { "env": "OPENAI_KEY" })',
    ])
    // A `$` that is no reference is a value like any other — and a whole
    // `$Name` is one unless written as environment variables are (capitals,
    // digits, `_`): a header's `$Version`, a key prefix `$gw`, a key that
    // starts with `$` were refused, and the key printed in the message.
    const dollars = valid() as ReturnType<typeof valid> & Record<string, unknown>
    dollars.providers.openai.apiKeys = ['sk-a$b', '$5-key-x', '$Kx9_q2ZZsecret']
    ;(dollars.providers.qwen as Record<string, unknown>)['headers'] = { 'X-Version': '$Version' }
    dollars['redis'] = { url: 'redis://10.0.0.5:6379', keyPrefix: '$gw' }
    expect(problems(dollars)).toEqual([])
  })

  it('a redis.url whose path or db names no database number is refused at its field', () => {
    // ioredis sent `SELECT NaN` for `/hourglass` (a namespace meant; that is
    // redis.keyPrefix) and left the refusal unhandled: `hourglass gateway`
    // ended with a stack trace once Redis connected (exit 1, right after
    // "listening"), or, Redis down at start, when it came back.
    const path =
      'redis.url: expected nothing after the host but a database number (redis://host:6379/2): the Redis client selects the database the path names, and a name there stopped the process once Redis connected (a namespace for the keys is redis.keyPrefix)'
    for (const url of [
      'redis://10.0.0.5:6379/hourglass',
      'redis://:s3cret@10.0.0.5:6379/-1',
      'redis://10.0.0.5:6379/%32',
      'rediss://10.0.0.5/2/keys',
    ]) {
      expect(problems({ ...valid(), redis: { url } }), url).toEqual([path])
    }
    expect(problems({ ...valid(), redis: { url: 'redis://10.0.0.5:6379?db=gw' } })).toEqual([
      'redis.url: expected the query\'s "db" to be a database number (?db=2): the Redis client selects the database it names, and a name there stopped the process once Redis connected',
    ])
    for (const url of [
      'redis://10.0.0.5:6379',
      'redis://10.0.0.5:6379/',
      'redis://10.0.0.5:6379/15',
      'redis://10.0.0.5?db=3',
    ]) {
      expect(problems({ ...valid(), redis: { url } }), url).toEqual([])
    }
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

  it('a header no adapter can send (transfer-encoding, content-length…) is a config error at its field, reported before Redis is dialled', async () => {
    // The schema takes any header token; llm's adapters refuse these five
    // (undici refuses them on every request). Before, createGateway threw the
    // adapter's bare TypeError after its Redis client had started dialling.
    const silent = createServer((socket) => {
      connections++
      socket.destroy()
    })
    let connections = 0
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
    try {
      const input = valid() as unknown as {
        providers: { openai: Record<string, unknown>; qwen: Record<string, unknown> }
        redis?: unknown
      }
      input.providers.openai['headers'] = { 'Transfer-Encoding': 'chunked' }
      input.providers.qwen['headers'] = { 'content-length': '12' }
      input.redis = { url: `redis://127.0.0.1:${(silent.address() as AddressInfo).port}` }
      let error: unknown
      try {
        createGateway(input)
      } catch (e) {
        error = e
      }
      expect(error).toBeInstanceOf(GatewayConfigError)
      const fields = (error as GatewayConfigError).problems.map((p) => p.field).sort()
      expect(fields).toEqual([
        'providers.openai.headers.Transfer-Encoding',
        'providers.qwen.headers.content-length',
      ])
      expect((error as GatewayConfigError).problems[0]?.message).toMatch(/cannot be set/)
      // A Redis client dials as it is made, and a loopback dial lands within
      // a few ms: 100 ms without one says none was made.
      await new Promise((resolve) => setTimeout(resolve, 100))
      expect(connections).toBe(0)
    } finally {
      await new Promise<void>((resolve) => silent.close(() => resolve()))
    }
  })

  it('millisecond options are checked when the gateway is made, naming the option (NaN failed every request later)', () => {
    // drainTimeoutMs NaN or negative used to mean "cut every request in flight at once" on SIGTERM.
    for (const name of ['firstTokenTimeoutMs', 'replyReserveMs', 'drainTimeoutMs'] as const) {
      for (const bad of [Number.NaN, -1]) {
        expect(() => createGateway(valid(), { [name]: bad })).toThrow(
          new RegExp(`createGateway: ${name} must be a number of ms ≥ 0`),
        )
        expect(optionErrorCode(() => createGateway(valid(), { [name]: bad }))).toBe(
          'GATEWAY_OPTION_INVALID',
        )
      }
    }
  })

  it('replyReserveMs must leave the default budget some time (as large, every request without a budget of its own was a 504 at 0 ms)', () => {
    const config = (defaultMs: number) => ({
      ...valid(),
      deadline: { defaultMs, maxMs: 300_000, reserveMs: 5 },
    })
    const given = () => createGateway(config(1000), { replyReserveMs: 1000 })
    expect(given).toThrow(
      /^createGateway: replyReserveMs must be less than the config's deadline.defaultMs \(1000 ms\), got 1000$/,
    )
    expect(optionErrorCode(given)).toBe('GATEWAY_OPTION_INVALID')
    // Left at its default (25 ms), it is the config's default budget that is too short: said at its field.
    expect(() => createGateway(config(20))).toThrow(
      /deadline\.defaultMs: must be more than 30 ms: the deadline keeps its reserveMs \(5 ms\) and the gateway 25 ms/,
    )
    expect(() => createGateway(config(1000), { replyReserveMs: 994 }).close()).not.toThrow()
    expect(() => createGateway(config(31)).close()).not.toThrow()
  })

  it("the deadline's own reserve and replyReserveMs must leave the default budget some time (else every request without a budget of its own was a 504 on arrival, no provider asked)", () => {
    const problemsOf = (deadline: Record<string, number>, options = {}) => {
      try {
        createGateway({ ...valid(), deadline: { maxMs: 300_000, ...deadline } }, options).close()
      } catch (error) {
        return (error as GatewayConfigError).problems
      }
      return []
    }
    expect(problemsOf({ defaultMs: 1000, reserveMs: 980 })).toEqual([
      {
        field: 'deadline.reserveMs',
        message:
          'must be less than 975 ms, deadline.defaultMs less the 25 ms the gateway keeps to write its 504: every request without a deadline header would be answered 504 on arrival (got 980)',
      },
    ])
    // No reserveMs: the adaptive reserve's floor, 10 ms, is kept at least.
    expect(problemsOf({ defaultMs: 30 })).toEqual([
      {
        field: 'deadline.defaultMs',
        message:
          'must be more than 35 ms: the deadline keeps at least 10 ms (the floor of its adaptive reserveMs) and the gateway 25 ms to write its 504, and every request without a deadline header would be answered 504 on arrival (got 30)',
      },
    ])
    expect(problemsOf({ defaultMs: 1000, reserveMs: 974 })).toEqual([])
    expect(problemsOf({ defaultMs: 36 })).toEqual([])
    // Mounted without its deadline (the app's own in front), only the reply reserve counts.
    expect(problemsOf({ defaultMs: 30 }, { mountDeadline: false })).toEqual([])
  })

  it('maxBodyBytes must be a whole number ≥ 1 (0, -1 or 1.5 made every request a 413; NaN an unnamed error)', () => {
    for (const bad of [Number.NaN, 0, -1, 1.5, '4mb']) {
      const make = () => createGateway(valid(), { maxBodyBytes: bad as number })
      expect(make).toThrow(/createGateway: maxBodyBytes must be a whole number of bytes ≥ 1/)
      expect(optionErrorCode(make)).toBe('GATEWAY_OPTION_INVALID')
    }
    expect(() => createGateway(valid(), { maxBodyBytes: 1024 }).close()).not.toThrow()
  })

  it('limits.windowMs must be whole seconds: a config error at its field, not a RangeError from the limiter at start', () => {
    const input = { ...valid(), limits: { windowMs: 1500 } }
    expect(problems(input)).toEqual([
      'limits.windowMs: expected whole seconds (a multiple of 1000 ms)',
    ])
    let error: unknown
    try {
      createGateway(input)
    } catch (e) {
      error = e
    }
    expect(isGatewayConfigError(error)).toBe(true)
    expect(problems({ ...valid(), limits: { windowMs: 30_000 } })).toEqual([])
  })

  it('limits.windowMs is at most a Node timer’s reach (2147483647 ms, so 2147483000 in whole seconds: 24.8 days): a monthly window is refused at its field, not accepted and left unlimited', () => {
    // 30 days: the local limiter's window ended after 1 ms (a Node timer holds
    // at most 2^31 - 1 ms), so an rpm of 1 let every request through.
    expect(problems({ ...valid(), limits: { windowMs: 2_592_000_000 } })).toEqual([
      'limits.windowMs: expected at most 2147483000 ms (24.8 days, the longest a Node timer waits, in whole seconds): a longer window would end at once, limiting nothing',
    ])
    expect(problems({ ...valid(), limits: { windowMs: 2_147_484_000 } })).toHaveLength(1)
    expect(problems({ ...valid(), limits: { windowMs: 2_147_483_000 } })).toEqual([])
  })

  it('deadline.reserveMs must leave the default budget some time (as large, every request was a 504)', () => {
    expect(problems({ ...valid(), deadline: { reserveMs: 60_000 } })).toEqual([
      'deadline.reserveMs: must be less than the default budget, deadline.defaultMs’s default (60000)',
    ])
    expect(problems({ ...valid(), deadline: { defaultMs: 400, reserveMs: 500 } })).toEqual([
      'deadline.reserveMs: must be less than deadline.defaultMs (400)',
    ])
    expect(problems({ ...valid(), deadline: { reserveMs: 50 } })).toEqual([])
  })

  it('keys and header values that cannot be sent in an HTTP header are refused at their field, never quoted', () => {
    // Accepted before: every request then failed in the HTTP client, was
    // classified as a network error, retried, and answered 502.
    const input = valid() as unknown as { providers: { openai: Record<string, unknown> } }
    input.providers.openai['apiKeys'] = [
      'sk-fine-1',
      'sk-trailing-newline-77\n',
      'sk with-space-77',
      { env: 'GW_KEY_FROM_FILE' },
      'sk-ключ-77',
    ]
    input.providers.openai['headers'] = {
      'x-fine': 'a value with spaces',
      'x tenant': 'v',
      'x-crlf': 'tenant-77\r\nx-injected: 1',
      'x-trailing': 'tenant-77 ',
      'x-env': { env: 'GW_KEY_FROM_FILE' },
    }
    // A key read from a secret file usually ends with a newline.
    const env = { GW_KEY_FROM_FILE: 'sk-from-file-77\n' }
    let error: unknown
    try {
      parseGatewayConfig(input, { env })
    } catch (e) {
      error = e
    }
    expect(isGatewayConfigError(error)).toBe(true)
    const key =
      'expected visible ASCII characters only (no spaces, line breaks or control characters: a key is sent in an HTTP header)'
    const value =
      'expected an HTTP header value: visible ASCII, spaces inside only, no line breaks or control characters'
    expect((error as GatewayConfigError).problems.map((p) => `${p.field}: ${p.message}`)).toEqual([
      `providers.openai.apiKeys[1]: ${key}`,
      `providers.openai.apiKeys[2]: ${key}`,
      `providers.openai.apiKeys[3]: ${key}`,
      `providers.openai.apiKeys[4]: ${key}`,
      'providers.openai.headers["x tenant"]: expected an HTTP header name (letters, digits, -, no spaces)',
      `providers.openai.headers.x-crlf: ${value}`,
      `providers.openai.headers.x-trailing: ${value}`,
      `providers.openai.headers.x-env: ${value}`,
    ])
    expect((error as Error).message).not.toMatch(/77/)
  })
})

describe('a key wrapped in quotes', () => {
  it('is refused at its field, never quoted: `docker run --env-file` keeps the quotes of KEY="sk-…", which were sent as part of the key (every request a 401, the keys retired)', () => {
    const input = valid() as unknown as { providers: { openai: Record<string, unknown> } }
    input.providers.openai['apiKeys'] = [
      { env: 'GW_QUOTED_KEY' },
      "'sk-single-quoted-77'",
      'sk-inner"quote-77',
    ]
    const quoted =
      'expected no quotes around the key: they would be sent as part of it (an env file read by `docker run --env-file` keeps them: write KEY=sk-… without quotes)'
    expect(problems(input, { GW_QUOTED_KEY: '"sk-double-quoted-77"' })).toEqual([
      `providers.openai.apiKeys[0]: ${quoted}`,
      `providers.openai.apiKeys[1]: ${quoted}`,
    ])
    let message = ''
    try {
      parseGatewayConfig(input, { env: { GW_QUOTED_KEY: '"sk-double-quoted-77"' } })
    } catch (error) {
      message = (error as Error).message
    }
    expect(message).not.toMatch(/77/)
  })
})

describe('a key header wrapped in quotes, the credential when apiKeys is empty', () => {
  it("is refused at its field, never quoted: the dialect's key header (x-api-key, authorization, x-goog-api-key) or Azure's api-key went out with the quotes, every request a 401; other headers keep theirs", () => {
    const provider = (dialect: string, baseURL: string, headers: Record<string, unknown>) => ({
      dialect,
      baseURL,
      apiKeys: [],
      headers,
    })
    const input = {
      providers: {
        claude: provider('anthropic', 'https://api.anthropic.com', {
          'X-Api-Key': { env: 'GW_QUOTED_HEADER' },
        }),
        proxy: provider('openai', 'https://api.openai.com/v1', {
          authorization: '"Bearer sk-proxy-77"',
          'x-proxy-note': '"quoted-77"',
        }),
        bearer: provider('deepseek', 'https://api.deepseek.com', {
          Authorization: "Bearer 'sk-deep-77'",
        }),
        google: provider('gemini', 'https://generativelanguage.googleapis.com/v1beta', {
          'x-goog-api-key': "'AIza-77'",
        }),
        fine: provider('anthropic', 'https://api.anthropic.com', {
          'x-api-key': 'sk-ant"inner-77',
        }),
        // Azure OpenAI's key header, beside apiKeys or not: sent as configured either way.
        azure: {
          ...provider('openai', 'https://res.openai.azure.com/openai/v1', {
            'Api-Key': { env: 'GW_QUOTED_AZURE' },
          }),
          apiKeys: ['azure-key-77'],
        },
      },
      models: { m: { fallback: [{ provider: 'claude', model: 'claude-sonnet-4-5' }] } },
    }
    const env = { GW_QUOTED_HEADER: '"sk-ant-api03-77"', GW_QUOTED_AZURE: "'a0b1c2d3e4f5-77'" }
    const quoted =
      'expected no quotes around the credential: they would be sent as part of it (an env file read by `docker run --env-file` keeps them: write KEY=sk-… without quotes)'
    expect(problems(input, env)).toEqual([
      `providers.claude.headers.X-Api-Key: ${quoted}`,
      `providers.proxy.headers.authorization: ${quoted}`,
      `providers.bearer.headers.Authorization: ${quoted}`,
      `providers.google.headers.x-goog-api-key: ${quoted}`,
      `providers.azure.headers.Api-Key: ${quoted}`,
    ])
    let message = ''
    try {
      parseGatewayConfig(input, { env })
    } catch (error) {
      message = (error as Error).message
    }
    expect(message).not.toMatch(/77/)
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

  // Read whole before: `--config /dev/zero` (or a log file named by mistake)
  // grew the heap until the process died, with no message.
  const TOO_LARGE = {
    field: '(file)',
    message: 'larger than 1 MiB (1048576 bytes), the most a config may be: is it the right file?',
  }

  it('a file over 1 MiB is refused as such, before it is parsed; one of 1 MiB loads', async () => {
    dir = await mkdtemp(join(tmpdir(), 'gateway-config-'))
    const file = join(dir, 'gateway.json')
    const json = JSON.stringify(valid())
    // Valid JSON either way: only the size refuses it.
    await writeFile(file, json.padEnd(1024 * 1024 + 1, ' '))
    const error = await loadGatewayConfig(file).catch((e: unknown) => e)
    expect((error as GatewayConfigError).problems).toEqual([TOO_LARGE])
    expect((error as GatewayConfigError).file).toBe(file)
    await writeFile(file, json.padEnd(1024 * 1024, ' '))
    expect(Object.keys((await loadGatewayConfig(file)).models)).toEqual(['small', 'large', 'auto'])
  })

  it.skipIf(process.platform === 'win32')(
    'an endless file (/dev/zero) is refused at 1 MiB',
    async () => {
      const error = await loadGatewayConfig('/dev/zero').catch((e: unknown) => e)
      expect(isGatewayConfigError(error)).toBe(true)
      expect((error as GatewayConfigError).problems).toEqual([TOO_LARGE])
    },
  )
})

describe('a price’s cacheCreationInputPerMTok (llm’s CostBudget: what a prompt-cache write bills)', () => {
  let harness: Harness | undefined
  let closeFake: (() => Promise<void>) | undefined
  afterEach(async () => {
    await harness?.close()
    await closeFake?.()
    harness = undefined
    closeFake = undefined
  })

  // Claude Sonnet's prices: a 5-minute cache write at 1.25× the input price.
  const price = {
    inputPerMTok: 3,
    outputPerMTok: 15,
    cachedInputPerMTok: 0.3,
    cacheCreationInputPerMTok: 3.75,
  }

  it('is accepted, at the standard tier and a listed one, checked as the other prices are', () => {
    const withPrice = (p: Record<string, unknown>) => {
      const config = valid()
      config.providers.qwen.prices = { 'qwen-plus': p as typeof price }
      return config
    }
    // Before: "providers.qwen.prices.qwen-plus.cacheCreationInputPerMTok:
    // unknown field (check the spelling)", and so at the tier.
    expect(problems(withPrice({ ...price, serviceTiers: { priority: price } }))).toEqual([])
    // llm's 1-hour write price and long-context price, which the schema refused
    // as unknown fields: a gateway could not price Anthropic's 1-hour writes
    // nor Gemini 2.5 Pro past 200K tokens.
    const long = { aboveInputTokens: 200_000, inputPerMTok: 6, outputPerMTok: 22.5 }
    expect(
      problems(withPrice({ ...price, cacheCreation1hInputPerMTok: 6, longContext: long })),
    ).toEqual([])
    expect(
      problems(withPrice({ ...price, longContext: { ...long, aboveInputTokens: 1.5 } })),
    ).toEqual([
      'providers.qwen.prices.qwen-plus.longContext.aboveInputTokens: expected a whole number of tokens',
    ])
    for (const bad of [-1, '3.75']) {
      const lines = problems(withPrice({ ...price, cacheCreationInputPerMTok: bad }))
      expect(lines).toHaveLength(1)
      expect(lines[0]).toMatch(/^providers\.qwen\.prices\.qwen-plus\.cacheCreationInputPerMTok: /)
    }
  })

  it('reaches the budget: a cache write is charged at the price given, not at twice the input price', async () => {
    const p = await fakeProvider('anthropic', ['sk-ant-cache-0001'], {
      prices: { 'claude-sonnet': price },
    })
    closeFake = () => p.fake.close()
    harness = await startHarness({
      providers: { p: p.entry },
      models: { m: fallback(['p', 'claude-sonnet']) },
      policy: { maxCostUsdPerRequest: 1 },
    })
    p.fake.enqueue(
      reply.text('ok', {
        usage: { inputTokens: 2000, cacheCreationInputTokens: 1000, outputTokens: 100 },
      }),
    )
    await harness.client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 100,
    })
    const line = harness.logs.find((l) => l.event === 'request')
    // 1000 plain input × $3 + 1000 written × $3.75 + 100 output × $15, per
    // million (at the default, twice the input price: $0.0105).
    expect(line?.['costUsd']).toBeCloseTo(0.00825, 12)
  })
})
