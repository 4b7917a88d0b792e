import { describe, expect, it } from 'vitest'
import {
  cleanMessage,
  cutRedacted,
  redactableKeys,
  withKeysRedacted,
} from '../../src/dialects/classifyError.js'
import { dialects } from '../../src/dialects/dialects.js'

const UUID = '3f9c2d1e-8b7a-4c65-9e21-0d4f7a6b5c38'
const OTHER = 'a71e0c94-2b3d-4f58-86c7-e19d2f4a0b6d'

describe('redacting keys by value', () => {
  it('redactableKeys: long enough ones only, once each, longest first', () => {
    expect(redactableKeys(['sk', 'k1', UUID, `${UUID}-2`, UUID, 'shortkey'])).toEqual([
      `${UUID}-2`,
      UUID,
      'shortkey',
    ])
  })

  it('a key that contains another is replaced whole', () => {
    const keys = redactableKeys([UUID, `${UUID}-extended`])
    expect(cleanMessage(`bad key ${UUID}-extended`, keys)).toBe('bad key [redacted]')
  })

  it('a key across the 500-character cut leaves no piece of itself', () => {
    const keys = redactableKeys([UUID])
    const message = cleanMessage(`${'x'.repeat(480)} ${UUID} and more`, keys)
    expect(message).not.toContain(UUID.slice(0, 8))
    expect(message.length).toBeLessThanOrEqual(500)
  })

  it('an organisation id or a URL’s credentials across the 500-character cut leave no piece of themselves', () => {
    const org = cleanMessage(`${'x '.repeat(242)}org-2itOgSdqw0DhUYp0QyLhttLL in organization`, [])
    expect(org).not.toContain('org-2itOgSdqw0D')
    const url = cleanMessage(
      `${'x '.repeat(240)}https://admin:hunter2secret@proxy.internal/v1 refused`,
      [],
    )
    expect(url).not.toContain('hunter2')
    expect(url).not.toContain('admin')
    // Whole, they are blanked too; a password with an `@` in it, to its last `@`.
    expect(
      cleanMessage(
        'upstream https://admin:p@ssw0rd@proxy.internal/v1 refused for org-2itOgSdqw0DhUYp0QyLhttLL',
        [],
      ),
    ).toBe('upstream https://[redacted]@proxy.internal/v1 refused for org-[redacted]')
  })

  it('credentials across the 16 000-character window, pulled before the cut by a long token’s redaction, leave no piece of themselves', () => {
    // A 15 600-character bearer token shrinks to `[redacted]`: what followed
    // it, the URL cut in its password by the window's end, would come into view.
    const text = `Bearer ${'a'.repeat(15_600)} ${'y '.repeat(187)}https://admin:hunter2secret@proxy.internal/v1`
    const message = cleanMessage(text, [])
    expect(message).not.toContain('admin')
    expect(message).toMatch(/^Bearer \[redacted\]( y)+…$/)
  })

  it('the 500-character cut never splits a surrogate pair: no lone half reaches a client', () => {
    const message = cleanMessage(`${'x'.repeat(498)}😀 and more`, [])
    // No lone half of a pair: what a client cannot encode.
    expect(message).not.toMatch(/\p{Cs}/u)
    expect(message).toBe(`${'x'.repeat(498)}…`)
    // The 200-character cut of a provider's code and `param` too.
    const long = `${'x'.repeat(199)}😀`
    const body = JSON.stringify({ error: { code: long, param: long, message: 'bad' } })
    const error = dialects.openai.normalizeError({ status: 400, body })
    expect(error?.providerCode).toBe('x'.repeat(199))
    expect(error?.param).toBe('x'.repeat(199))
  })

  it('a key across the window, pulled before the cut by earlier redactions, is still found', () => {
    const keys = redactableKeys([UUID])
    // Ten keys early on shrink the text by 260 characters; the eleventh starts at
    // 1020, across the first window's end (1000 + 36): cut there, its first 16
    // characters would be pulled back before character 1000.
    const early = Array.from({ length: 10 }, () => UUID).join(' ')
    const filler = 'y'.repeat(1020 - early.length)
    const text = `${early}${filler}${UUID}${'z'.repeat(100)}`
    const out = cutRedacted(text, 1000, keys)
    expect(out).not.toContain(UUID.slice(0, 6))
    expect(out.length).toBeLessThanOrEqual(1000)
  })

  it('withKeysRedacted: in force while the normaliser runs, not after, not past a throw', () => {
    const keys = redactableKeys([UUID, OTHER])
    const body = JSON.stringify({ error: { code: OTHER, message: `key ${UUID} is invalid` } })
    const inside = withKeysRedacted(keys, () =>
      dialects.doubao.normalizeError({ status: 401, body }),
    )
    expect(inside).toMatchObject({
      message: 'key [redacted] is invalid',
      providerCode: '[redacted]',
    })
    // Outside: no keys known, so the dialect alone cannot tell a UUID from an id.
    expect(dialects.doubao.normalizeError({ status: 401, body })?.message).toContain(UUID)
    expect(() =>
      withKeysRedacted(keys, () => {
        throw new Error('boom')
      }),
    ).toThrow('boom')
    expect(cleanMessage(`key ${UUID}`)).toContain(UUID)
    // Nested: the inner list for the inner call, the outer one back after it.
    withKeysRedacted(redactableKeys([OTHER]), () => {
      withKeysRedacted(keys, () => expect(cleanMessage(UUID)).toBe('[redacted]'))
      expect(cleanMessage(`${UUID} ${OTHER}`)).toBe(`${UUID} [redacted]`)
    })
  })
})
