import { request } from 'undici'
import { describe, expect, it } from 'vitest'
import { isHeaderName, isHeaderValue, isVisibleAscii } from '../src/index.js'

describe('what may go into a header line', () => {
  it('a header name is an RFC 9110 token', () => {
    for (const ok of ['x-api-key', 'Authorization', "x!#$%&'*+.^_`|~9"]) {
      expect(isHeaderName(ok), ok).toBe(true)
    }
    for (const bad of ['', 'x tenant', 'x:y', 'x\r\ny', 'ключ', 'x"y', 'x(y)', 'x/y']) {
      expect(isHeaderName(bad), JSON.stringify(bad)).toBe(false)
    }
  })

  it('a header value arrives as written: visible ASCII, spaces and tabs inside only', () => {
    for (const ok of ['', 'Bearer sk-1', 'a\tb', 'x']) expect(isHeaderValue(ok), ok).toBe(true)
    for (const bad of [' lead', 'trail ', 'tab\t', 'line\nbreak', 'cr\r', 'nul\0', 'ell…', 'é']) {
      expect(isHeaderValue(bad), JSON.stringify(bad)).toBe(false)
    }
  })

  it('a key or id is one run of visible ASCII (the trailing newline of a secret file fails)', () => {
    expect(isVisibleAscii('sk-abc_123/+=')).toBe(true)
    for (const bad of ['', 'sk-1\n', 'sk 1', 'sk-\u00e9', '\x7f']) {
      expect(isVisibleAscii(bad), JSON.stringify(bad)).toBe(false)
    }
  })

  it('whatever undici refuses to send is refused here too', async () => {
    // undici checks names and values before it opens a socket: a refused one
    // rejects with UND_ERR_INVALID_ARG even though nothing listens there.
    const refusedByUndici = async (name: string, value: string) => {
      try {
        await request('http://127.0.0.1:9/', { headers: { [name]: value } })
      } catch (error) {
        return (error as { code?: string }).code === 'UND_ERR_INVALID_ARG'
      }
      return false
    }
    for (const [name, value] of [
      ['x tenant', 'a'],
      ['x:y', 'a'],
      ['x-ok', 'line\nbreak'],
      ['x-ok', 'cr\rhere'],
      ['x-ok', 'nul\0here'],
    ] as const) {
      expect(await refusedByUndici(name, value), `${name}: ${JSON.stringify(value)}`).toBe(true)
      expect(isHeaderName(name) && isHeaderValue(value)).toBe(false)
    }
  })
})
