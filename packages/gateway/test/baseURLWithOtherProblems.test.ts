import { describe, expect, it } from 'vitest'
import { createGateway, type GatewayConfigError, parseGatewayConfig } from '../src/index.js'

/*
 * A provider `baseURL` no request could be sent to — Anthropic's with the
 * OpenAI habit's `/v1` (every request to `/v1/v1/messages`), a full
 * `/chat/completions` endpoint, `api.openai.com` without `/v1`, Gemini's
 * OpenAI-compatible address under the `gemini` dialect (its native
 * `/models/{model}:generateContent` asked below `/openai`) — was refused only
 * when the adapters were made at start: `parseGatewayConfig` (what a CI
 * config check runs) passed it, and at start it came after every other
 * problem of the config had been fixed. It is one of those problems, at its
 * field, by llm's own rule.
 */

function config(dialect: string, baseURL: string, policy: object = {}) {
  return {
    providers: { p: { dialect, baseURL, apiKeys: ['sk-fine'] } },
    models: { m: { fallback: [{ provider: 'p', model: 'x' }] } },
    policy,
  }
}

function problems(input: unknown): { field: string; message: string }[] {
  try {
    parseGatewayConfig(input, { env: {} })
  } catch (error) {
    return (error as GatewayConfigError).problems
  }
  return []
}

describe('a baseURL its adapter refuses is a config problem', () => {
  it.each([
    ['anthropic', 'https://api.anthropic.com/v1', /drop the trailing \/v1/],
    ['openai', 'https://api.openai.com/v1/chat/completions', /end it before \/chat\/completions/],
    ['deepseek', 'https://api.deepseek.com/chat/completions/', /end it before \/chat\/completions/],
    ['openai', 'https://api.openai.com', /add \/v1/],
    ['gemini', 'https://generativelanguage.googleapis.com/v1beta/models', /end it before \/models/],
    [
      'gemini',
      'https://generativelanguage.googleapis.com/v1beta/openai/',
      /Google’s OpenAI-compatible API.*end it before \/openai/,
    ],
    ['openai', 'https://generativelanguage.googleapis.com/v1beta', /under \/v1beta\/openai only/],
  ])('%s at %s: refused by parseGatewayConfig at providers.p.baseURL', (dialect, url, why) => {
    const found = problems(config(dialect, url))
    expect(found).toHaveLength(1)
    expect(found[0]?.field).toBe('providers.p.baseURL')
    expect(found[0]?.message).toMatch(why)
  })

  it('is listed with the config’s other problems, not after they are fixed', () => {
    const found = problems(config('anthropic', 'https://api.anthropic.com/v1', { maxAttempts: 99 }))
    expect(found.map((p) => p.field).sort()).toEqual(['policy.maxAttempts', 'providers.p.baseURL'])
  })

  it('createGateway reports it as the config error, at its field', () => {
    expect(() => createGateway(config('anthropic', 'https://api.anthropic.com/v1'))).toThrow(
      /providers\.p\.baseURL: must be an absolute http:\/\/ or https:\/\/ URL .*drop the trailing \/v1/,
    )
  })

  it('the bases each dialect’s SDK takes pass', () => {
    for (const [dialect, url] of [
      ['anthropic', 'https://api.anthropic.com'],
      ['openai', 'https://api.openai.com/v1'],
      ['openai', 'https://generativelanguage.googleapis.com/v1beta/openai/'],
      ['gemini', 'https://generativelanguage.googleapis.com/v1beta'],
      ['qwen', 'https://dashscope.aliyuncs.com/compatible-mode/v1'],
    ] as const) {
      expect(problems(config(dialect, url))).toEqual([])
    }
  })

  it('a URL the field’s own check refuses is said once, in the gateway’s words', () => {
    const found = problems(config('anthropic', 'https://user:pw@api.anthropic.com/v1'))
    expect(found).toHaveLength(1)
    expect(found[0]?.message).toMatch(/^expected no user or password/)
    expect(problems(config('openai', 'ftp://api.openai.com/v1'))).toHaveLength(1)
  })
})
