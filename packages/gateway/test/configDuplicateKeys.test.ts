import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type GatewayConfigError, loadGatewayConfig } from '../src/index.js'

/**
 * JSON.parse keeps the last of a key written twice and drops the first
 * without a word. A provider block copied and edited but not renamed
 * replaced the first one — its dialect, URL, keys and limits — and every
 * fallback naming it went to the other provider; the config loaded.
 */
describe('a key written twice in one object of the config file is refused', () => {
  let dir: string
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'hourglass-dup-config-'))
  })
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true })
  })

  const load = async (text: string) => {
    const file = join(dir, 'gateway.json')
    await writeFile(file, text, 'utf8')
    return loadGatewayConfig(file, { env: {} })
  }
  const problemsOf = async (text: string) =>
    ((await load(text).catch((e: unknown) => e)) as GatewayConfigError).problems

  const TWICE =
    'written twice in one object: JSON keeps the last and drops the first without a word (rename one, or merge them)'

  it('a provider and a model written twice, with the config’s other problems', async () => {
    const text = `{
      "providers": {
        "openai": { "dialect": "openai", "baseURL": "http://127.0.0.1:9/v1", "apiKeys": ["k1"], "limits": { "rpm": 600 } },
        "openai": { "dialect": "anthropic", "baseURL": "http://127.0.0.1:9", "apiKeys": ["k2"] }
      },
      "models": {
        "large": { "fallback": [{ "provider": "openai", "model": "gpt-4o" }] },
        "large": { "fallback": [{ "provider": "qwne", "model": "claude-sonnet-4-5" }] }
      }
    }`
    expect(await problemsOf(text)).toEqual([
      { field: 'providers.openai', message: TWICE },
      { field: 'models.large', message: TWICE },
      {
        field: 'models.large.fallback[0].provider',
        message: 'unknown provider "qwne" (known: openai)',
      },
    ])
  })

  it('at any depth, keys compared as JSON.parse decodes them', async () => {
    const text = `{
      "providers": { "a": { "dialect": "openai", "baseURL": "http://127.0.0.1:9/v1", "limits": { "rpm": 10 }, "limits": { "tpm": 5 } } },
      "models": { "m": { "fallback": [{ "provider": "a", "model": "x" }] }, "\\u006d": { "fallback": [{ "provider": "a", "model": "y" }] } }
    }`
    expect(await problemsOf(text)).toEqual([
      { field: 'providers.a.limits', message: TWICE },
      { field: 'models.m', message: TWICE },
    ])
  })

  it('the same name in different objects, or inside a string value, is no repeat', async () => {
    const text = `{
      "providers": { "a": { "dialect": "openai", "baseURL": "http://127.0.0.1:9/v1", "headers": { "x-note": "{\\"a\\":1,\\"a\\":2}" } } },
      "models": { "a": { "fallback": [{ "provider": "a", "model": "a" }] }, "b": { "fallback": [{ "provider": "a", "model": "a" }] } }
    }`
    await expect(load(text)).resolves.toMatchObject({ models: { a: {}, b: {} } })
  })
})

describe('the scan for keys written twice', () => {
  it('is linear in the nesting depth: 50,000 nested arrays, as JSON.parse takes them', async () => {
    const { duplicateJsonKeys } = await import('../src/config/duplicateJsonKeys.js')
    const deep = `${'['.repeat(50_000)}${']'.repeat(50_000)}`
    // Each frame held a copy of its whole path: 10,000 deep took 2.8 s and
    // 621 MB, and this ran out of memory (42 ms now).
    expect(duplicateJsonKeys(deep)).toEqual([])
    expect(duplicateJsonKeys(`{"a":[[{"b":1,"b":2}]]}`).map((p) => p.field)).toEqual(['a[0][0].b'])
  })

  it('lists the first 20 repeats and counts the rest: 5,000 repeats 5,000 deep', async () => {
    const { duplicateJsonKeys } = await import('../src/config/duplicateJsonKeys.js')
    const deep = `${'['.repeat(5_000)}{${Array(5_000).fill('"a":1').join(',')}}${']'.repeat(5_000)}`
    // Each listed repeat builds its 15 KB path: all 4,999 took 14 s and 1.4 GB.
    const problems = duplicateJsonKeys(deep)
    expect(problems).toHaveLength(21)
    expect(problems.at(-1)).toEqual({
      field: '(json)',
      message: '4979 more keys written twice (the first 20 are listed)',
    })
  })
})
