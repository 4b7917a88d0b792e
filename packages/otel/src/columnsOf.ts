/**
 * How many terminal columns `text` (printable: escaped already) takes: a
 * wide character (CJK ideographs, kana, Hangul, fullwidth forms, the emoji
 * drawn two columns wide) takes two; a combining mark, a format character
 * (the zero-width non-joiner and joiner, a flag's tags: the only ones
 * `escapeUnprintable` leaves raw) and a Hangul medial vowel or final
 * consonant (U+1160–U+11FF and U+D7B0–U+D7FF, drawn into the syllable its initial starts)
 * none; any other code point one. Measured in UTF-16 units, a slice named
 * `检索文档` took 4 of the label column's 30 and was drawn 8 wide: its bar,
 * and every figure after it, stood 4 columns right of the other lines' on
 * the shared time axis.
 * The widths are Unicode's East Asian Width (W and F) as terminals draw
 * them, by block (the emoji blocks whole: their few text-style symbols are
 * counted two); JavaScript's RegExp has no property for it, hence the ranges.
 */
export function columnsOf(text: string): number {
  if (!MAYBE_NOT_ONE_COLUMN.test(text)) return text.length
  let columns = 0
  for (const char of text) {
    const code = char.codePointAt(0) as number
    // Zero width first: a combining mark inside a wide block (U+3099, the
    // voiced mark of `が` decomposed, as macOS writes file names) is drawn
    // over the kana before it; counted two, it put the bar 2 columns left.
    if (ZERO_WIDTH.test(char) || isJamoAfterInitial(code)) continue
    columns += isWide(code) ? 2 : 1
  }
  return columns
}

/**
 * A Hangul medial vowel or final consonant (U+1160–U+11FF, and the old ones
 * of Jamo Extended-B, U+D7B0–U+D7FF), drawn into the syllable its initial
 * starts: none, as glibc's wcwidth counts them.
 */
function isJamoAfterInitial(code: number): boolean {
  return (code >= 0x1160 && code <= 0x11ff) || (code >= 0xd7b0 && code <= 0xd7ff)
}

/** Printable ASCII is one column a unit: the common case, measured by its length. */
const MAYBE_NOT_ONE_COLUMN = /[^\x20-\x7e]/
/**
 * Combining marks, drawn over the character before them, and format
 * characters, not drawn: a Persian name's zero-width non-joiner, an emoji
 * sequence's joiner, a subdivision flag's tags (the Scotland flag's six,
 * counted one each, put its bar 6 columns left).
 */
const ZERO_WIDTH = /^[\p{Mn}\p{Me}\p{Cf}]$/u

/** East Asian Width W and F, as [first, last] code points, in order. */
const WIDE: ReadonlyArray<readonly [number, number]> = [
  [0x1100, 0x115f],
  [0x231a, 0x231b],
  [0x2329, 0x232a],
  [0x23e9, 0x23ec],
  [0x23f0, 0x23f0],
  [0x23f3, 0x23f3],
  [0x25fd, 0x25fe],
  [0x2614, 0x2615],
  [0x2648, 0x2653],
  [0x267f, 0x267f],
  [0x2693, 0x2693],
  [0x26a1, 0x26a1],
  [0x26aa, 0x26ab],
  [0x26bd, 0x26be],
  [0x26c4, 0x26c5],
  [0x26ce, 0x26ce],
  [0x26d4, 0x26d4],
  [0x26ea, 0x26ea],
  [0x26f2, 0x26f3],
  [0x26f5, 0x26f5],
  [0x26fa, 0x26fa],
  [0x26fd, 0x26fd],
  [0x2705, 0x2705],
  [0x270a, 0x270b],
  [0x2728, 0x2728],
  [0x274c, 0x274c],
  [0x274e, 0x274e],
  [0x2753, 0x2755],
  [0x2757, 0x2757],
  [0x2795, 0x2797],
  [0x27b0, 0x27b0],
  [0x27bf, 0x27bf],
  [0x2b1b, 0x2b1c],
  [0x2b50, 0x2b50],
  [0x2b55, 0x2b55],
  [0x2e80, 0x303e],
  [0x3041, 0x33ff],
  [0x3400, 0x4dbf],
  [0x4e00, 0x9fff],
  [0xa000, 0xa4cf],
  [0xa960, 0xa97f],
  [0xac00, 0xd7a3],
  [0xf900, 0xfaff],
  [0xfe10, 0xfe19],
  [0xfe30, 0xfe6f],
  [0xff00, 0xff60],
  [0xffe0, 0xffe6],
  [0x16fe0, 0x16fe4],
  [0x17000, 0x18cff],
  [0x1b000, 0x1b2ff],
  [0x1f004, 0x1f004],
  [0x1f0cf, 0x1f0cf],
  [0x1f18e, 0x1f18e],
  [0x1f191, 0x1f19a],
  [0x1f200, 0x1f251],
  [0x1f300, 0x1f64f],
  [0x1f680, 0x1f6ff],
  [0x1f7e0, 0x1f7eb],
  [0x1f90c, 0x1f9ff],
  [0x1fa70, 0x1faff],
  [0x20000, 0x2fffd],
  [0x30000, 0x3fffd],
]

function isWide(code: number): boolean {
  if (code < 0x1100) return false
  let low = 0
  let high = WIDE.length - 1
  while (low <= high) {
    const mid = (low + high) >> 1
    const [first, last] = WIDE[mid] as readonly [number, number]
    if (code < first) high = mid - 1
    else if (code > last) low = mid + 1
    else return true
  }
  return false
}
