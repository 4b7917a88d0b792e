import { describe, expect, it } from 'vitest'
import { anthropic } from '../src/adapters/anthropic.js'
import { createAdapter } from '../src/adapters/createAdapter.js'
import { gemini } from '../src/adapters/gemini.js'
import { openAICompatible } from '../src/adapters/openAICompatible.js'
import { Admission } from '../src/admission/Admission.js'
import { MemoryCooldownStore } from '../src/admission/MemoryCooldownStore.js'
import { ProviderLimits } from '../src/admission/ProviderLimits.js'
import { RedisCooldownStore } from '../src/admission/RedisCooldownStore.js'
import { MemorySideEffectStore } from '../src/agent/MemorySideEffectStore.js'
import { dialects } from '../src/dialects/dialects.js'
import { RetryBudgetRegistry } from '../src/retry/RetryBudgetRegistry.js'

// Each entry point built once at start-up, with one misspelled key beside
// the ones it reads: ignored, the default stayed in force while its author
// believed it changed (`commandTimeoutMS: 50` left Redis calls at the
// default, `maxResponseByte` the 32 MiB cap). Each is refused by core's
// refuseUnknownOptions: a TypeError naming the key, the option probably
// meant, and the taker.
const adapter = { baseURL: 'https://api.openai.com/v1', model: 'gpt-4o-mini', apiKey: 'sk-test' }
const redis = { evalsha: async () => null, eval: async () => null }
const cases: Array<{
  taker: string
  build: (extra: object) => unknown
  key: string
  meant?: string
}> = [
  {
    taker: 'openAICompatible()',
    build: (extra) => openAICompatible({ ...adapter, dialect: 'deepseek', ...extra }),
    key: 'replayThinkng',
    meant: 'replayThinking',
  },
  {
    taker: 'anthropic()',
    build: (extra) =>
      anthropic({ baseURL: 'https://api.anthropic.com', model: 'claude', apiKey: 'k', ...extra }),
    key: 'maxResponseByte',
    meant: 'maxResponseBytes',
  },
  {
    taker: 'gemini()',
    build: (extra) =>
      gemini({
        baseURL: 'https://generativelanguage.googleapis.com/v1beta',
        model: 'gemini-2.5-flash',
        apiKey: 'k',
        ...extra,
      }),
    key: 'header',
    meant: 'headers',
  },
  {
    taker: 'createAdapter()',
    build: (extra) => createAdapter(dialects.openai, { ...adapter, ...extra }),
    key: 'dialect',
  },
  {
    taker: 'new Admission()',
    build: (extra) => new Admission({ staggerMs: 0, ...extra }),
    key: 'storeTimeoutMS',
    meant: 'storeTimeoutMs',
  },
  {
    taker: 'new MemoryCooldownStore()',
    build: (extra) => new MemoryCooldownStore({ ...extra }),
    key: 'clok',
    meant: 'clock',
  },
  {
    taker: 'new ProviderLimits()',
    build: (extra) => new ProviderLimits({ limits: { openai: { rpm: 60 } }, ...extra }),
    key: 'windowMS',
    meant: 'windowMs',
  },
  {
    taker: 'new RedisCooldownStore()',
    build: (extra) => new RedisCooldownStore(redis, { ...extra }),
    key: 'commandTimeoutMS',
    meant: 'commandTimeoutMs',
  },
  {
    taker: 'new MemorySideEffectStore()',
    build: (extra) => new MemorySideEffectStore({ ...extra }),
    key: 'maxEntrys',
    meant: 'maxEntries',
  },
  {
    taker: 'new RetryBudgetRegistry()',
    build: (extra) => new RetryBudgetRegistry({ ...extra }),
    key: 'tokenRatioo',
    meant: 'tokenRatio',
  },
]

describe('a start-up entry point refuses a key it does not read', () => {
  for (const { taker, build, key, meant } of cases) {
    it(`${taker} refuses ${key}`, () => {
      expect(() => build({})).not.toThrow()
      const hint = meant === undefined ? '' : ` \\(did you mean ${meant}\\?\\)`
      expect(() => build({ [key]: 1 })).toThrow(TypeError)
      expect(() => build({ [key]: 1 })).toThrow(
        new RegExp(`unknown option "${key}"${hint}; ${taker.replace(/[()]/g, '\\$&')} takes `),
      )
    })
  }

  it('ProviderLimits refuses a misspelled field of a limit (ignored, the provider had no limit)', () => {
    expect(
      () => new ProviderLimits({ limits: { openai: { rpm: 60, tpM: 1000 } as never } }),
    ).toThrow(
      /unknown field "tpM" \(did you mean tpm\?\); ProviderLimits: limits\["openai"\] takes rpm, tpm/,
    )
  })
})

describe('openAICompatible() passes on every adapter option it reads', () => {
  it('an options object whose apiKey is a getter, or whose base comes from a prototype, keeps it', () => {
    // Its own two options were taken off with a rest spread, which kept own
    // keys only: an options class serving the key from a getter built an
    // adapter with none (a 401 at the first call), as anthropic() did not.
    class Options {
      baseURL = 'https://api.deepseek.com'
      model = 'deepseek-chat'
      dialect = 'deepseek' as const
      get apiKey() {
        return 'sk-from-getter'
      }
    }
    expect(openAICompatible(new Options()).apiKeys).toEqual(['sk-from-getter'])
    const inherited = Object.create({ baseURL: 'https://api.deepseek.com', apiKey: 'sk-p' })
    inherited.model = 'deepseek-chat'
    expect(openAICompatible(inherited).apiKeys).toEqual(['sk-p'])
  })
})
