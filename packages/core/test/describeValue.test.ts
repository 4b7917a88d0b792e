import { describe, expect, it } from 'vitest'
import { describeValue } from '../src/index.js'

const SCOTLAND = '\u{1f3f4}\u{e0067}\u{e0062}\u{e0073}\u{e0063}\u{e0074}\u{e007f}'
// A lone half of a surrogate pair, anywhere in a message.
const LONE_HALF = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

describe('describeValue', () => {
  it('shows a string quoted and said to be one, an array or object by kind, the rest as String', () => {
    expect(describeValue('100')).toBe("'100' (a string)")
    expect(describeValue([1])).toBe('an array')
    expect(describeValue({})).toBe('an object')
    expect(describeValue(null)).toBe('null')
    expect(describeValue(Number.NaN)).toBe('NaN')
  })

  it('shows a line break, a terminal escape or a bidi override in a string as its escape: one line, nothing hidden', () => {
    expect(describeValue('a\nb')).toBe(String.raw`'a\nb' (a string)`)
    expect(describeValue('\u001b[2Jx')).toBe(String.raw`'\u001b[2Jx' (a string)`)
    expect(describeValue('x\u202ey')).toBe(String.raw`'x\u202ey' (a string)`)
    expect(describeValue('a\u2028b\u0000')).toBe(String.raw`'a\u2028b\u0000' (a string)`)
    // A lone half the caller sent is shown as its escape too.
    expect(describeValue('a\ud83d')).toBe(String.raw`'a\ud83d' (a string)`)
  })

  it('cuts a long string to 40 characters, … last', () => {
    expect(describeValue('x'.repeat(100))).toBe(`'${'x'.repeat(39)}…' (a string)`)
  })

  it('never leaves half an emoji: a cut inside one leaves it out', () => {
    // 39 x then 😀: a cut at 40 UTF-16 units would keep 😀's high half alone.
    const shown = describeValue(`${'x'.repeat(39)}😀${'y'.repeat(10)}`)
    expect(shown).not.toMatch(LONE_HALF)
    expect(shown).toBe(`'${'x'.repeat(39)}…' (a string)`)
  })

  it('never cuts inside a flag or an escape', () => {
    // A flag across the cut is left out whole, not shown as 🏴 and escaped tags.
    expect(describeValue(`${'x'.repeat(30)}${SCOTLAND}${'y'.repeat(10)}`)).toBe(
      `'${'x'.repeat(30)}…' (a string)`,
    )
    // Cut, then escaped: the escape is whole.
    expect(describeValue(`${'x'.repeat(38)}\n${'y'.repeat(10)}`)).toBe(
      `'${'x'.repeat(38)}\\n…' (a string)`,
    )
  })

  it('keeps the format characters that are parts of words, as escapeUnprintable does', () => {
    expect(describeValue('👨\u200d👩')).toBe("'👨\u200d👩' (a string)")
    expect(describeValue(SCOTLAND)).toBe(`'${SCOTLAND}' (a string)`)
  })
})

describe('describeValue of a function or a class', () => {
  it('shows a function by kind and name, not its source', () => {
    function currentDeadlineLike() {
      return 1
    }
    expect(describeValue(currentDeadlineLike)).toBe('a function currentDeadlineLike')
    expect(describeValue(() => 0)).toBe('a function')
  })

  it('shows a class passed where its instance belongs as that, on one short line', () => {
    class ManualClockLike {
      now() {
        return 0
      }
    }
    expect(describeValue(ManualClockLike)).toBe('the class ManualClockLike, not an instance')
    expect(describeValue(class {})).toBe('the class, not an instance')
  })

  it('keeps a name, a symbol or a huge BigInt one cut line', () => {
    const fn = () => 0
    Object.defineProperty(fn, 'name', { value: `a\n${'x'.repeat(100)}` })
    expect(describeValue(fn)).toBe(`a function a\\n${'x'.repeat(37)}…`)
    expect(describeValue(Symbol('a\nb'))).toBe(String.raw`Symbol(a\nb)`)
    expect(describeValue(10n ** 100n)).toBe(`1${'0'.repeat(38)}… (a BigInt)`)
  })

  // Shown as String writes it, a BigInt read as the number it is not:
  // `plan({ a: 1n })` said "must be a positive share, got 1", and
  // `Deadline.after(100n)` "expects a number of milliseconds, got 100".
  it('says a BigInt is one, as a string is said to be one', () => {
    expect(describeValue(100n)).toBe('100n (a BigInt)')
    expect(describeValue(-1n)).toBe('-1n (a BigInt)')
  })

  it('shows a function whose name or source cannot be read by kind', () => {
    const hostile = new Proxy(() => 0, {
      get() {
        throw new Error('no reads')
      },
    })
    expect(describeValue(hostile)).toBe('a function')
  })
})
