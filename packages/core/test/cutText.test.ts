import { describe, expect, it } from 'vitest'
import { cutText } from '../src/index.js'

// Scotland: 🏴 (a surrogate pair), the tag letters g b s c t (a pair each),
// the cancel tag (a pair): 14 UTF-16 units, one flag.
const SCOTLAND = '\u{1f3f4}\u{e0067}\u{e0062}\u{e0073}\u{e0063}\u{e0074}\u{e007f}'

describe('cutText', () => {
  it('keeps a text that fits, and cuts a longer one to maxChars with … last', () => {
    expect(cutText('abc', 3)).toBe('abc')
    expect(cutText('abcdef', 4)).toBe('abc…')
    expect(cutText('abcdef', Number.POSITIVE_INFINITY)).toBe('abcdef')
  })

  it('never cuts between the two halves of a surrogate pair', () => {
    // 'ab😀c' cut to 4: the cut would fall after 😀's high half.
    expect(cutText('ab😀cd', 4)).toBe('ab…')
    expect(cutText('ab😀cd', 5)).toBe('ab😀…')
  })

  it('never cuts inside a subdivision flag: it cuts before its 🏴', () => {
    expect(SCOTLAND).toHaveLength(14)
    const text = `ab${SCOTLAND}cd`
    // Every cut that would land inside the flag (after its 🏴, among its tags,
    // before its cancel tag) leaves the flag out whole.
    for (let maxChars = 4; maxChars <= 16; maxChars++) {
      expect(cutText(text, maxChars), `maxChars ${maxChars}`).toBe('ab…')
    }
    // Room for the whole flag: kept.
    expect(cutText(text, 17)).toBe(`ab${SCOTLAND}…`)
    expect(cutText(text, 18)).toBe(text)
  })

  it('finds the flag in a long text, and cuts a tag run that is no flag as any text', () => {
    const long = `${'x'.repeat(10_000)}${SCOTLAND}${'y'.repeat(10_000)}`
    const cut = cutText(long, 10_008)
    // Compared by its tail: a failure then prints a few characters, not 10,000.
    expect(cut.slice(-3)).toBe('xx…')
    expect(cut).toHaveLength(10_001)
    // Tags with no cancel tag: no flag, hidden characters cut between pairs.
    const unflagged = `a\u{1f3f4}\u{e0067}\u{e0062}\u{e0073}z`
    expect(cutText(unflagged, 6)).toBe('a\u{1f3f4}\u{e0067}…')
  })
})
