import { startFakeProvider } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { anthropic } from '../../src/adapters/anthropic.js'
import { createAdapter } from '../../src/adapters/createAdapter.js'
import { gemini } from '../../src/adapters/gemini.js'
import type { AdapterOptions, ModelAdapter } from '../../src/adapters/ModelAdapter.js'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { dialects } from '../../src/dialects/dialects.js'
import { sendHi } from './support/sendHi.js'

/*
 * Each adapter appends its own path to `baseURL`, as its provider's SDK
 * does: OpenAI's `/chat/completions` after a base holding `/v1`,
 * Anthropic's `/v1/messages` after a bare host, Gemini's
 * `/models/{model}:…` after a base holding `/v1beta`. The error for a bad
 * `baseURL` showed OpenAI's examples (`…/v1`) for all of them, and a base
 * that already ended in what is appended — `anthropic({ baseURL:
 * 'https://api.anthropic.com/v1' })`, as that message suggested — was
 * accepted, every request going to `/v1/v1/messages`: a 404 on every call.
 */

const opened: ModelAdapter[] = []
afterEach(async () => {
  await Promise.all(opened.splice(0).map((a) => a.close()))
})

type Make = (options: AdapterOptions) => ModelAdapter
const make = {
  openai: (o: AdapterOptions) => openAICompatible(o),
  anthropic: (o: AdapterOptions) => anthropic(o),
  gemini: (o: AdapterOptions) => gemini(o),
} satisfies Record<string, Make>

function refusal(factory: Make, baseURL: unknown): string {
  try {
    opened.push(factory({ baseURL, apiKey: 'sk-fine', model: 'm' } as AdapterOptions))
  } catch (e) {
    expect(e).toBeInstanceOf(TypeError)
    return (e as Error).message
  }
  throw new Error('the adapter was made')
}

function accepts(factory: Make, baseURL: string): void {
  opened.push(factory({ baseURL, apiKey: 'sk-fine', model: 'm' }))
}

describe('a baseURL is checked against its own adapter’s convention', () => {
  it('the option error shows examples of the adapter’s own base, not OpenAI’s', () => {
    expect(refusal(make.openai, 5)).toBe(
      'openai adapter: baseURL must be an absolute http:// or https:// URL (https://api.openai.com/v1, http://localhost:8080/v1), got a number',
    )
    const claude = refusal(make.anthropic, 'api.anthropic.com')
    expect(claude).toMatch(
      /^anthropic adapter: baseURL must be an absolute .*https:\/\/api\.anthropic\.com[,)]/,
    )
    expect(claude).toMatch(/no \/v1/)
    expect(claude).not.toContain('openai.com')
    const google = refusal(make.gemini, undefined)
    expect(google).toMatch(/\(https:\/\/generativelanguage\.googleapis\.com\/v1beta, /)
    expect(google).not.toContain('openai.com')
    // A custom adapter on a dialect is told its wire's convention too.
    expect(
      refusal((o) => createAdapter(dialects.anthropic, { ...o, name: 'claude-eu' }), 5),
    ).toMatch(/^claude-eu adapter: baseURL must be .*https:\/\/api\.anthropic\.com/)
  })

  it.each([
    ['https://api.anthropic.com/v1'],
    ['https://api.anthropic.com/v1/'],
    ['https://proxy.example/anthropic/v1'],
    ['https://api.anthropic.com/v1/messages'],
  ])('anthropic() refuses %s, whose path ends in the /v1 it appends, naming the fix', (url) => {
    const message = refusal(make.anthropic, url)
    expect(message).toMatch(/^anthropic adapter: baseURL must be /)
    expect(message).toMatch(/already ends in what the adapter appends \(\/v1\/messages\)/)
    expect(message).toMatch(/drop the trailing \/v1 \(https:\/\/api\.anthropic\.com/)
    expect(message).not.toContain(url)
  })

  it.each([
    ['https://generativelanguage.googleapis.com/v1beta/models'],
    ['https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent'],
  ])('gemini() refuses %s, whose path ends in the /models it appends', (url) => {
    expect(refusal(make.gemini, url)).toMatch(
      /appends \(\/models\/\{model\}:generateContent\).*end it before \/models/,
    )
  })

  it('openAICompatible() refuses a base that ends in /chat/completions (the endpoint copied)', () => {
    expect(refusal(make.openai, 'https://api.openai.com/v1/chat/completions')).toMatch(
      /appends \(\/chat\/completions\).*end it before \/chat\/completions/,
    )
  })

  it('the official hosts whose base holds a version are refused without one, naming it', () => {
    expect(refusal(make.gemini, 'https://generativelanguage.googleapis.com')).toMatch(
      /needs its API version in the path .*add \/v1beta/,
    )
    expect(refusal(make.openai, 'https://api.openai.com/')).toMatch(/add \/v1 /)
  })

  it('each convention’s own bases, and proxies rooted elsewhere, are accepted', () => {
    accepts(make.openai, 'https://api.openai.com/v1')
    accepts(make.openai, 'https://dashscope.aliyuncs.com/compatible-mode/v1')
    accepts(make.openai, 'http://localhost:8080')
    accepts(make.anthropic, 'https://api.anthropic.com')
    accepts(make.anthropic, 'https://api.anthropic.com/')
    accepts(make.anthropic, 'https://api.deepseek.com/anthropic')
    accepts(make.anthropic, 'https://gateway.ai.cloudflare.com/v1/acct/gw/anthropic')
    accepts(make.gemini, 'https://generativelanguage.googleapis.com/v1beta')
    accepts(make.gemini, 'https://generativelanguage.googleapis.com/v1')
    accepts(make.gemini, 'http://localhost:8080')
  })

  it('an accepted anthropic base reaches the provider at /v1/messages, once', async () => {
    const fake = await startFakeProvider({ dialect: 'anthropic' })
    try {
      const adapter = anthropic({ baseURL: fake.baseURL, apiKey: 'sk-fine', model: 'm' })
      opened.push(adapter)
      const result = await sendHi(adapter, 'sk-fine')
      expect(result.ok).toBe(true)
      expect(fake.requests.map((r) => r.path)).toEqual(['/v1/messages'])
    } finally {
      await fake.close()
    }
  })
})
