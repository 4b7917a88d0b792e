import { describe, expect, it } from 'vitest'
import { escapeId, escapeUnprintable, quoted } from '../src/index.js'

const SCOTLAND = '\u{1f3f4}\u{e0067}\u{e0062}\u{e0073}\u{e0063}\u{e0074}\u{e007f}'
const SCOTLAND_ESCAPED = String.raw`🏴\udb40\udc67\udb40\udc62\udb40\udc73\udb40\udc63\udb40\udc74\udb40\udc7f`

describe('escapeUnprintable: for any text, a provider’s words too', () => {
  it('writes controls, format characters, separators and a lone half as JSON escapes', () => {
    expect(escapeUnprintable('a\nb\r\tc')).toBe(String.raw`a\nb\r\tc`)
    expect(escapeUnprintable('\u001b[2J\u0085\u202e\u200b\ufeff\u2028\u2029')).toBe(
      String.raw`\u001b[2J\u0085\u202e\u200b\ufeff\u2028\u2029`,
    )
    expect(escapeUnprintable('a\ud83d')).toBe(String.raw`a\ud83d`)
    expect(escapeUnprintable('plain 😀 "x" \\')).toBe('plain 😀 "x" \\')
  })

  it('keeps the format characters that are parts of words, and a flag whole', () => {
    expect(escapeUnprintable('می\u200cخواهم 👨\u200d👩')).toBe('می\u200cخواهم 👨\u200d👩')
    expect(escapeUnprintable(SCOTLAND)).toBe(SCOTLAND)
    // Its tags anywhere else are hidden ASCII.
    expect(escapeUnprintable('a\u{e0067}')).toBe(String.raw`a\udb40\udc67`)
  })
})

describe('quoted and escapeId: for a name, every format character escaped', () => {
  it('quoted writes a value as JSON writes a string, cut after a whole escape', () => {
    expect(quoted('gpt-4o\n', 40)).toBe(String.raw`"gpt-4o\n"`)
    expect(quoted('a"b\\c', 40)).toBe(String.raw`"a\"b\\c"`)
    expect(quoted('a\u200db', 40)).toBe(String.raw`"a\u200db"`)
    expect(quoted('ab\u202ecd', 5)).toBe('"ab…"')
  })

  it('escapeId escapes as quoted does inside its quotes, without the quotes', () => {
    expect(escapeId('--a\nb')).toBe(String.raw`--a\nb`)
    expect(escapeId('\u001b[2Jx')).toBe(String.raw`\u001b[2Jx`)
    expect(escapeId('a\u200db\u200cc')).toBe(String.raw`a\u200db\u200cc`)
    expect(escapeId(SCOTLAND)).toBe(SCOTLAND_ESCAPED)
    expect(escapeId('a\ud83d 😀')).toBe(String.raw`a\ud83d 😀`)
    // Nothing to close with no quotes around it: a Windows path reads as typed.
    expect(escapeId(String.raw`C:\conf "x".json`)).toBe(String.raw`C:\conf "x".json`)
    for (const value of ['--a\nb', 'a\u200db', SCOTLAND, '\u0085x']) {
      expect(`"${escapeId(value)}"`).toBe(quoted(value, 1000))
    }
  })
})
