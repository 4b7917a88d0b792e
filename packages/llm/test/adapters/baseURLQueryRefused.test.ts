import { startFakeProvider } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { anthropic } from '../../src/adapters/anthropic.js'
import { gemini } from '../../src/adapters/gemini.js'
import type { AdapterOptions, ModelAdapter } from '../../src/adapters/ModelAdapter.js'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { sendHi } from './support/sendHi.js'

/*
 * The adapter appends its path to `baseURL` as text, so a `?query` or a
 * `#fragment` in it swallowed the path: `…/v1?api-version=1` asked `/v1`
 * (the query `api-version=1/chat/completions`), a 404 on every call, each
 * retried or handed to the next model. The gateway's config refuses such a
 * URL; the adapters now do too.
 */

const factories: [string, (o: AdapterOptions) => ModelAdapter][] = [
  ['openai', (o) => openAICompatible(o)],
  ['anthropic', (o) => anthropic(o)],
  ['gemini', (o) => gemini(o)],
]

function thrownBy(make: () => ModelAdapter): unknown {
  try {
    void make().close()
  } catch (e) {
    return e
  }
  return undefined
}

describe('a baseURL with a query string or fragment is refused when the adapter is made', () => {
  it.each([
    ['a query', 'https://proxy.example/llm?api-version=2024-06-01&sig=secret'],
    ['an empty query', 'https://proxy.example/llm?'],
    ['a fragment', 'https://proxy.example/llm#token-xyz'],
  ])('%s: refused, naming why, the value not shown', (_, baseURL) => {
    for (const [name, make] of factories) {
      const error = thrownBy(() => make({ baseURL, apiKey: 'sk-fine', model: 'm' }))
      expect(error).toBeInstanceOf(TypeError)
      const message = (error as Error).message
      expect(message).toMatch(
        new RegExp(
          `^${name} adapter: baseURL must have no query string or fragment \\(\\?… or #…\\): the adapter appends its path`,
        ),
      )
      expect(message).not.toContain('secret')
      expect(message).not.toContain('xyz')
    }
  })

  it('a base without one still reaches the request path', async () => {
    const fake = await startFakeProvider({ dialect: 'openai' })
    const adapter = openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-fine', model: 'm' })
    try {
      const result = await sendHi(adapter, 'sk-fine')
      expect(result.ok).toBe(true)
      expect(fake.requests.map((r) => r.path)).toEqual(['/v1/chat/completions'])
    } finally {
      await adapter.close()
      await fake.close()
    }
  })
})
