import { describe, expect, it } from 'vitest'
import { dialects, isDialectName } from '../../src/dialects/dialects.js'

describe('dialects registry', () => {
  it('has the seven providers, each with every operation', () => {
    expect(Object.keys(dialects).sort()).toEqual([
      'anthropic',
      'deepseek',
      'doubao',
      'ernie',
      'gemini',
      'openai',
      'qwen',
    ])
    for (const [name, d] of Object.entries(dialects)) {
      expect(d.name).toBe(name)
      for (const fn of [
        'buildRequest',
        'authHeaders',
        'parseResponse',
        'createStreamParser',
        'normalizeError',
        'normalizeStreamError',
      ] as const) {
        expect(typeof d[fn]).toBe('function')
      }
    }
    expect(Object.isFrozen(dialects)).toBe(true)
  })

  it('puts the key in each provider’s own header', () => {
    expect(dialects.openai.authHeaders('k1')).toEqual({ authorization: 'Bearer k1' })
    expect(dialects.qwen.authHeaders('k1')).toEqual({ authorization: 'Bearer k1' })
    expect(dialects.anthropic.authHeaders('k1')).toEqual({ 'x-api-key': 'k1' })
    expect(dialects.gemini.authHeaders('k1')).toEqual({ 'x-goog-api-key': 'k1' })
  })

  it('recognises its names and nothing inherited', () => {
    expect(isDialectName('doubao')).toBe(true)
    expect(isDialectName('toString')).toBe(false)
    expect(isDialectName('__proto__')).toBe(false)
  })

  it('the OpenAI-compatible providers share the OpenAI wire format; Anthropic and Gemini have their own', () => {
    expect(Object.values(dialects).map((d) => `${d.name}:${d.wire}`)).toEqual([
      'openai:openai',
      'deepseek:openai',
      'qwen:openai',
      'ernie:openai',
      'doubao:openai',
      'anthropic:anthropic',
      'gemini:gemini',
    ])
  })
})
