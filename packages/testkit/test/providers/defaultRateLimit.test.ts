import { afterEach, describe, expect, it } from 'vitest'
import {
  deepseekErrors,
  type FakeProvider,
  type ProviderDialect,
  startFakeProvider,
} from '../../src/providers/index.js'

let fake: FakeProvider | undefined
afterEach(async () => {
  await fake?.close()
  fake = undefined
})

const PATHS: Partial<Record<ProviderDialect, string>> = {
  anthropic: '/v1/messages',
  gemini: '/models/m:generateContent',
}

async function limited(dialect: ProviderDialect) {
  fake = await startFakeProvider({ dialect })
  fake.rateLimit({ forMs: 2500 })
  const res = await fetch(fake.baseURL + (PATHS[dialect] ?? '/chat/completions'), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', messages: [] }),
  })
  const headers = Object.fromEntries(res.headers)
  const body = (await res.json()) as unknown
  await fake.close()
  fake = undefined
  return { status: res.status, headers, body }
}

describe("a rate-limit window's default reply", () => {
  it("deepseek: DeepSeek's own 429, not OpenAI's", async () => {
    // It was OpenAI's: retry-after, six x-ratelimit-* headers, x-request-id and
    // "Rate limit reached for gpt-4o-mini in organization org-fake".
    const got = await limited('deepseek')
    expect(got.status).toBe(429)
    expect(got.body).toEqual(deepseekErrors.rateLimited().body)
    expect(Object.keys(got.headers).filter((h) => /retry|ratelimit|request-id/.test(h))).toEqual([])
  })

  it('names the window in retry-after for openai and anthropic only (gemini: in its body)', async () => {
    const retryAfter: Record<string, string | undefined> = {}
    for (const dialect of [
      'openai',
      'anthropic',
      'gemini',
      'deepseek',
      'qwen',
      'ernie',
      'doubao',
    ] as const) {
      const got = await limited(dialect)
      expect(got.status, dialect).toBe(429)
      retryAfter[dialect] = got.headers['retry-after']
      if (dialect === 'gemini') expect(JSON.stringify(got.body)).toContain('"retryDelay":"3s"')
    }
    expect(retryAfter).toEqual({
      openai: '3',
      anthropic: '3',
      gemini: undefined,
      deepseek: undefined,
      qwen: undefined,
      ernie: undefined,
      doubao: undefined,
    })
  })
})
