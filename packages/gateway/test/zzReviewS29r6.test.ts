import { describe, expect, it } from 'vitest'
import { dialects } from '@hourglass/llm'
import { providerText } from '../src/http/providerText.js'
import { escapeUnprintable, quoted } from '../src/http/escapeUnprintable.js'
import { cutText } from '../src/http/cutText.js'
import { toOpenAIError } from '../src/openai/encode.js'

describe('review 9db3164', () => {
  it('URL credentials: a password with a raw @ (WHATWG splits at the last @) is blanked whole', () => {
    const text = 'upstream https://admin:p@ssw0rd@proxy.internal/v1 refused'
    expect(new URL('https://admin:p@ssw0rd@proxy.internal/v1').password).toBe('p%40ssw0rd')
    expect(providerText(text, 500)).not.toContain('ssw0rd')
  })

  it('ZWJ / ZWNJ / tag characters in a provider message are kept (Persian, emoji)', () => {
    const persian = 'درخواست نامعتبر است: می\u200cخواهم'
    expect(providerText(persian, 500)).toBe(persian)
    const family = 'bad emoji 👨\u200d👩\u200d👧'
    expect(providerText(family, 500)).toBe(family)
  })

  it('non-Latin, emoji, combining marks kept', () => {
    const t = '参数无效 🙂 e\u0301 Ошибка'
    expect(providerText(t, 500)).toBe(t)
  })

  it('hostile 1 MB input: providerText under 200 ms', () => {
    for (const hostile of ['a.'.repeat(500_000), 'a-'.repeat(500_000), 'a+'.repeat(500_000), `${'a'.repeat(20)}://${'x'.repeat(1_000_000)}`, 'a:/'.repeat(300_000)]) {
      const t0 = performance.now()
      providerText(hostile, 500)
      const ms = performance.now() - t0
      expect(ms, hostile.slice(0, 6)).toBeLessThan(200)
    }
  }, 120_000)

  it('hostile 1 MB input through exported toOpenAIError: under 200 ms', () => {
    const t0 = performance.now()
    toOpenAIError({ kind: 'bad_request', retryable: false, status: 400, message: 'a.'.repeat(500_000) })
    expect(performance.now() - t0).toBeLessThan(200)
  }, 120_000)

  it('hostile 20 kB (10 kB of pairs): providerText time', () => {
    const t0 = performance.now()
    providerText('a.'.repeat(10_000), 500)
    console.log('20kB ms', performance.now() - t0)
    const t1 = performance.now()
    providerText('a.'.repeat(250), 500)
    console.log('500 chars ms', performance.now() - t1)
  })

  it('escapeUnprintable / quoted on 1 MB', () => {
    const t0 = performance.now()
    escapeUnprintable('\u0000'.repeat(1_000_000))
    quoted('\u0000'.repeat(1_000_000), 100)
    expect(performance.now() - t0).toBeLessThan(500)
  })

  it('a provider message cut by llm inside a surrogate pair: the client sees no \\ud83d', () => {
    const e = dialects.openai.normalizeError({
      status: 400,
      body: JSON.stringify({ error: { message: `${'a'.repeat(498)}😀 tail`, type: 'invalid_request_error', code: 'x' } }),
    })
    const shown = escapeUnprintable(providerText(e!.message, 500))
    expect(shown).not.toContain('\\ud83d')
  })

  it('an org id cut short by llm at 500 chars is still blanked', () => {
    const e = dialects.openai.normalizeError({
      status: 400,
      body: JSON.stringify({ error: { message: `${'a '.repeat(243)}in organization org-2itOgSdqw0DhUYp0QyLhttLL`, type: 'invalid_request_error', code: 'x' } }),
    })
    expect(providerText(e!.message, 500)).not.toMatch(/org-[A-Za-z0-9]{4,}/)
  })

  it('a provider message whose own text is the literal 2 characters \\n stays as is (no double escape)', () => {
    expect(escapeUnprintable(providerText('bad value "a\\nb"', 500))).toBe('bad value "a\\nb"')
  })

  it('cutText small limits', () => {
    expect(cutText('abcdef', 1).length).toBeLessThanOrEqual(1)
    expect(cutText('😀😀😀', 2)).toBe('…')
  })

  it('llm figures', () => {
    const n = (m: string) =>
      dialects.openai.normalizeError({
        status: 429,
        body: JSON.stringify({ error: { message: `Request too large for gpt-4o in organization org-x on tokens per min (TPM): ${m}. The input or output tokens must be reduced in order to run successfully.`, type: 'tokens', code: 'rate_limit_exceeded' } }),
      })?.overLimit
    console.log('1e12', n('Limit 1,000,000,000,000, Requested 2,000,000,000,000'))
    console.log('30,000.5', n('Limit 30,000.5, Requested 36,278'))
    console.log('1e15 grouped', n('Limit 1,000,000,000,000,000, Requested 2'))
    console.log('mixed', n('Limit 30000, Requested 36,278'))
    console.log('leading zero group', n('Limit 030,000, Requested 36,278'))
    console.log('plain 16 digits', n('Limit 1000000000000000, Requested 2'))
  })
})
