import { isGatewayConfigError, parseGatewayConfig } from '@hourglass/gateway'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { fuzzRuns } from '../support/fuzzRuns.js'

/**
 * Every malformed gateway config names the bad field. Starting from a valid
 * config that sets every field the schema knows, each field in turn is given
 * a value of the wrong JSON type, removed, or joined by a misspelt sibling;
 * then 1,500 random mutations (any value at any path, several at once;
 * 5,000 until session 50, 50,000 under `HOURGLASS_SOAK=long`, or
 * `HOURGLASS_FUZZ_RUNS`), which must between them break every path.
 * Each broken config is refused with a `GatewayConfigError` whose problems
 * name the field that was broken (or, for a removed field, the field itself);
 * none quotes a key back. String values given as `{ "env": NAME }` (a key,
 * a baseURL, a header, the Redis URL with its password) are broken the same
 * way, and their resolved values are never quoted either.
 */

const KEY = 'sk-config-secret-3e9b1d7c'
const ENV = {
  GW_KEY: 'sk-from-env-5a7c9e1b3d',
  GW_CLAUDE_URL: 'https://api.anthropic.example',
  GW_HEADER: 'secret-header-from-env-4d6f',
  GW_REDIS_URL: 'redis://:redis-pass-9f1e@127.0.0.1:6379',
}

function valid(): Record<string, unknown> {
  return {
    providers: {
      qwen: {
        dialect: 'qwen',
        baseURL: 'https://dashscope.example/compatible-mode/v1',
        apiKeys: [KEY, { env: 'GW_KEY' }],
        headers: { 'x-extra': 'secret-header-value-8c2e', 'x-env': { env: 'GW_HEADER' } },
        limits: { rpm: 600, tpm: 1_000_000 },
        prices: { 'qwen-plus': { inputPerMTok: 0.4, outputPerMTok: 1.2 } },
      },
      claude: {
        dialect: 'anthropic',
        baseURL: { env: 'GW_CLAUDE_URL' },
        apiKeys: [KEY],
        prices: { 'claude-x': { inputPerMTok: 3, outputPerMTok: 15 } },
      },
    },
    models: {
      small: { fallback: [{ provider: 'qwen', model: 'qwen-plus' }] },
      large: {
        fallback: [
          { provider: 'claude', model: 'claude-x' },
          { provider: 'qwen', model: 'qwen-plus' },
        ],
      },
      auto: {
        route: { small: 'small', large: 'large', maxSmallPromptTokens: 1000, largeWhenTools: true },
      },
    },
    aliases: { 'gpt-4o': 'auto' },
    deadline: { defaultMs: 60_000, maxMs: 300_000, reserveMs: 10 },
    policy: {
      maxAttempts: 2,
      max529Retries: 1,
      priority: 'foreground',
      defaultMaxTokens: 4096,
      maxCostUsdPerRequest: 0.5,
    },
    limits: { windowMs: 60_000, instances: 2 },
    redis: { url: { env: 'GW_REDIS_URL' }, keyPrefix: 'gw' },
  }
}

type Path = (string | number)[]

/** `['providers', 'qwen', 'apiKeys', 1]` → `providers.qwen.apiKeys[1]`, as the gateway prints it. */
function show(path: Path): string {
  let out = ''
  for (const p of path) {
    if (typeof p === 'number') out += `[${p}]`
    else
      out += /^[A-Za-z_$][\w$-]*$/.test(p)
        ? `${out === '' ? '' : '.'}${p}`
        : `[${JSON.stringify(p)}]`
  }
  return out === '' ? '(root)' : out
}

function everyPath(value: unknown, prefix: Path = [], out: Path[] = []): Path[] {
  if (prefix.length > 0) out.push(prefix)
  if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      everyPath(v, [...prefix, Array.isArray(value) ? Number(k) : k], out)
    }
  }
  return out
}

function at(tree: unknown, path: Path): unknown {
  return path.reduce<unknown>((node, key) => (node as Record<string | number, unknown>)[key], tree)
}

function edit(
  tree: unknown,
  path: Path,
  change: (parent: Record<string | number, unknown>, key: string | number) => void,
) {
  const copy = structuredClone(tree)
  const parent = at(copy, path.slice(0, -1)) as Record<string | number, unknown>
  change(parent, path[path.length - 1]!)
  return copy
}

function tryAt(tree: unknown, path: Path): unknown {
  try {
    return at(tree, path)
  } catch {
    return undefined
  }
}

function isEnvRef(v: unknown): boolean {
  return v !== null && typeof v === 'object' && !Array.isArray(v) && Object.hasOwn(v, 'env')
}

/** A value of another JSON type than `v`. */
function wrongType(v: unknown): unknown {
  if (typeof v === 'string') return 42
  if (typeof v === 'number') return '42'
  if (typeof v === 'boolean') return 'yes'
  if (Array.isArray(v)) return { not: 'an array' }
  return 7
}

/** Refused, with a problem at `path` (or inside it) and no key quoted back. */
function namesField(input: unknown, path: Path): string | undefined {
  try {
    parseGatewayConfig(input, { env: ENV })
    return `accepted a broken ${show(path)}`
  } catch (error) {
    if (!isGatewayConfigError(error)) return `threw ${String(error)}`
    const target = show(path)
    // Any string may be { env }: a bad `env` (or a field next to it) is reported at the field that holds it.
    const holder = path.findIndex((_, i) => isEnvRef(tryAt(valid(), path.slice(0, i + 1))))
    const entry =
      holder >= 0
        ? show(path.slice(0, holder + 1))
        : path.includes('apiKeys')
          ? show(path.slice(0, path.indexOf('apiKeys') + 2))
          : target
    const hit = error.problems.some(
      (p) =>
        p.field === target ||
        p.field === entry ||
        p.field.startsWith(`${target}.`) ||
        p.field.startsWith(`${target}[`),
    )
    if (!hit)
      return `broke ${target}, problems name ${error.problems.map((p) => p.field).join(', ')}`
    const secrets = [KEY, 'secret-header-value-8c2e', ...Object.values(ENV)]
    if (secrets.some((s) => error.message.includes(s))) {
      return `quoted a secret back for ${target}`
    }
    return undefined
  }
}

describe('gateway config validation', () => {
  it('the starting config is valid (every field set)', () => {
    expect(() => parseGatewayConfig(valid(), { env: ENV })).not.toThrow()
  })

  it('every field given a value of the wrong type is refused, naming that field', () => {
    const paths = everyPath(valid())
    const failures = paths.flatMap((p) => {
      const broken = edit(valid(), p, (parent, key) => {
        parent[key] = wrongType(parent[key])
      })
      const why = namesField(broken, p)
      return why ? [why] : []
    })
    console.info(`config: ${paths.length} fields given a wrong type`)
    expect(failures).toEqual([])
  })

  it('every field joined by a misspelt sibling is refused, naming the unknown field', () => {
    const objects = [[], ...everyPath(valid())].filter((p) => {
      const v = at(valid(), p)
      return v !== null && typeof v === 'object' && !Array.isArray(v)
    })
    // Records of names (providers, models, aliases, headers, prices) take any key; the rest are strict.
    const records = new Set(['providers', 'models', 'aliases', 'headers', 'prices'])
    const strict = objects.filter((p) => !records.has(String(p[p.length - 1])))
    const failures = strict.flatMap((p) => {
      const broken = structuredClone(valid())
      const parent = (p.length === 0 ? broken : at(broken, p)) as Record<string, unknown>
      const first = Object.keys(parent)[0] ?? 'field'
      parent[`${first}Typo`] = 1
      const why = namesField(broken, [...p, `${first}Typo`])
      return why ? [why] : []
    })
    console.info(`config: ${strict.length} objects given an unknown field`)
    expect(strict.length).toBeGreaterThan(10)
    expect(failures).toEqual([])
  })

  it('every required field removed is refused, naming it', () => {
    const required: Path[] = [
      ['providers'],
      ['models'],
      ['providers', 'qwen', 'dialect'],
      ['providers', 'qwen', 'baseURL'],
      ['providers', 'qwen', 'prices', 'qwen-plus', 'inputPerMTok'],
      ['models', 'small', 'fallback', 0, 'provider'],
      ['models', 'small', 'fallback', 0, 'model'],
      ['models', 'auto', 'route', 'small'],
      ['models', 'auto', 'route', 'large'],
      ['redis', 'url'],
    ]
    const failures = required.flatMap((p) => {
      const why = namesField(
        edit(valid(), p, (parent, key) => {
          delete parent[key]
        }),
        p,
      )
      return why ? [why] : []
    })
    expect(failures).toEqual([])
  })

  const RUNS = fuzzRuns(1_500, 50_000)
  it(`${RUNS.toLocaleString('en-US')} random breakages at random paths: refused or accepted, never a crash, never a secret quoted`, () => {
    const paths = everyPath(valid())
    let refused = 0
    const broken = new Set<number>()
    const hostile = fc.oneof(
      fc.jsonValue({ maxDepth: 2 }),
      fc.constantFrom(null, -1, 0, 1e308, '', '__proto__', 'x'.repeat(5000), {
        __proto__: { a: 1 },
      }),
    )
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.nat(paths.length - 1), hostile), { minLength: 1, maxLength: 3 }),
        (changes) => {
          let config: unknown = valid()
          for (const [i, value] of changes) {
            broken.add(i)
            const p = paths[i]!
            try {
              config = edit(config, p, (parent, key) => {
                parent[key] = value
              })
            } catch {
              // An earlier change removed this path's parent: nothing to set.
            }
          }
          try {
            parseGatewayConfig(config, { env: ENV })
            return true
          } catch (error) {
            refused++
            return (
              isGatewayConfigError(error) &&
              error.problems.length > 0 &&
              error.problems.every((p) => typeof p.field === 'string' && p.field.length > 0) &&
              ![KEY, ...Object.values(ENV)].some((s) => error.message.includes(s))
            )
          }
        },
      ),
      { numRuns: RUNS },
    )
    expect(refused).toBeGreaterThan(RUNS / 2)
    // Every path of the config was broken at least once.
    if (RUNS >= 1_500) expect(broken.size).toBe(paths.length)
  }, 60_000)
})
