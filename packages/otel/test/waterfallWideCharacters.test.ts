import { formatWaterfall } from '@hourglass/otel'
import { expect, it } from 'vitest'

// A terminal draws a CJK ideograph (or kana, Hangul, a fullwidth form) two
// columns wide. Measured in UTF-16 units, a slice named in Chinese took half
// the label column it was drawn with: its bar and figures stood right of
// every other line's, off the shared time axis, and a long one ran past the
// line's width.

const T0 = 1_700_000_000
const ms = (n: number): [number, number] => [T0, n * 1e6]
const TRACE = 'ab'.repeat(16)
const ROOT = '01'.repeat(8)

const span = (spanId: string, name: string, from: number, to: number) => ({
  name,
  spanContext: () => ({ traceId: TRACE, spanId, traceFlags: 1 }),
  parentSpanContext: spanId === ROOT ? undefined : { traceId: TRACE, spanId: ROOT, traceFlags: 1 },
  startTime: ms(from),
  endTime: ms(to),
  attributes: {},
  status: { code: 0 },
  events: [],
})

/** Columns a terminal gives `text`: two for each CJK ideograph or Hangul syllable here. */
const drawnWidth = (text: string) =>
  [...text].reduce((n, c) => n + (/[\u4e00-\u9fff\uac00-\ud7a3]/.test(c) ? 2 : 1), 0)
/** The column a line's bar starts in, as drawn. */
const barColumn = (line: string) => drawnWidth(line.slice(0, line.indexOf('|')))

it('draws every bar from the same column, whatever the width of the characters in the names', () => {
  const spans = [
    span(ROOT, 'GET /search', 0, 100),
    span('02'.repeat(8), 'deadline.slice 检索文档', 10, 60),
    span('03'.repeat(8), 'deadline.slice rerank', 60, 90),
    // Cut: its characters are 2 columns each, the label column 30.
    span('04'.repeat(8), 'deadline.slice 生成回答并且检查引用是否正确完整', 60, 90),
    span('05'.repeat(8), 'deadline.slice 요약', 90, 100),
  ]
  const lines = formatWaterfall(spans, { legend: false }).slice(0, -1).split('\n').slice(1)
  expect(lines).toHaveLength(5)
  const columns = lines.map(barColumn)
  expect(new Set(columns).size).toBe(1)
  for (const line of lines) expect(drawnWidth(line)).toBeLessThanOrEqual(80)
  // The long name is cut to fit, whole characters only, and says so.
  expect(lines.find((l) => l.includes('生成'))).toMatch(/生成[^|]*~ *\|/)
})

/**
 * Columns a terminal gives `text`, as wcwidth does: none for a combining
 * mark (the voiced mark of a decomposed `が`, as macOS writes file names),
 * a zero-width (non-)joiner, a flag's tags or a Hangul vowel or final
 * consonant after its initial; two for kana, an ideograph, a Hangul
 * syllable (or its initial, decomposed) and the black flag under a
 * subdivision's tags.
 */
const terminalWidth = (text: string) =>
  [...text].reduce(
    (n, c) =>
      n +
      (/^[\p{Mn}\p{Me}\p{Cf}\u1160-\u11ff]$/u.test(c)
        ? 0
        : /^[\u1100-\u115f\u3040-\u30ff\u4e00-\u9fff\uac00-\ud7a3\u{1f3f4}]$/u.test(c)
          ? 2
          : 1),
    0,
  )

it('draws every bar from the same column with zero-width characters in the names', () => {
  const spans = [
    span(ROOT, 'GET /search', 0, 100),
    // Decomposed, as macOS names files: か and a combining voiced mark, twice.
    span('02'.repeat(8), 'deadline.slice \u304b\u3099\u304b\u3099', 10, 60),
    // Persian "I want", its zero-width non-joiner part of the word.
    span('03'.repeat(8), 'deadline.slice \u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645', 60, 90),
    // The Scotland flag: a black flag, five tag letters and a cancel tag.
    span(
      '04'.repeat(8),
      'deadline.slice \u{1f3f4}\u{e0067}\u{e0062}\u{e0073}\u{e0063}\u{e0074}\u{e007f}',
      60,
      90,
    ),
    // 한국 decomposed into its jamo: an initial, a vowel, a final each.
    span('05'.repeat(8), 'deadline.slice \u1112\u1161\u11ab\u1100\u116e\u11a8', 90, 100),
    span('06'.repeat(8), 'deadline.slice rerank', 90, 100),
  ]
  const lines = formatWaterfall(spans, { legend: false }).slice(0, -1).split('\n').slice(1)
  expect(lines).toHaveLength(6)
  const columns = lines.map((l) => terminalWidth(l.slice(0, l.indexOf('|'))))
  expect(columns).toEqual(Array(6).fill(columns[0]))
  // Kept whole: each takes a few columns of the label's 30.
  expect(lines.some((l) => l.includes('\u304b\u3099\u304b\u3099 '))).toBe(true)
  expect(lines.some((l) => l.includes('\u200c\u062e'))).toBe(true)
  expect(lines.some((l) => l.includes('\u{e007f} '))).toBe(true)
  expect(lines.some((l) => l.includes('\u11a8 '))).toBe(true)
})

it('cuts a name of a million combining marks to a short line, as any long name', () => {
  const spans = [
    span(ROOT, 'GET /search', 0, 100),
    span('02'.repeat(8), `deadline.slice a${'\u0301'.repeat(1_000_000)}`, 10, 60),
  ]
  const lines = formatWaterfall(spans, { legend: false }).slice(0, -1).split('\n').slice(1)
  expect(lines).toHaveLength(2)
  // It was the whole name: 1,000,070 UTF-16 units, ~2 s to draw.
  expect(Math.max(...lines.map((l) => l.length))).toBeLessThan(300)
  expect(lines[1]).toMatch(/^ {3}deadline\.slice a\u0301*~ *\|/u)
  const columns = lines.map((l) => terminalWidth(l.slice(0, l.indexOf('|'))))
  expect(columns[1]).toBe(columns[0])
})

it('draws a name that fits whole, without ~, however many UTF-16 units its flags and marks take', () => {
  const england = '\u{1f3f4}\u{e0067}\u{e0062}\u{e0065}\u{e006e}\u{e0067}\u{e007f}'
  const scotland = '\u{1f3f4}\u{e0067}\u{e0062}\u{e0073}\u{e0063}\u{e0074}\u{e007f}'
  // 23 of the label's 30 columns, 71 UTF-16 units: it was drawn whole and marked cut.
  const flags = `deadline.slice ${england}${scotland}${england}${scotland}`
  // One column, 21 units: a letter with 20 marks (within a stream-safe run of 30).
  const marked = `deadline.slice e${'\u0301'.repeat(20)}`
  const spans = [
    span(ROOT, 'GET /search', 0, 100),
    span('02'.repeat(8), flags, 10, 60),
    span('03'.repeat(8), marked, 60, 90),
    // An old Hangul final consonant (Jamo Extended-B) after its syllable: no column.
    span('04'.repeat(8), 'deadline.slice \uac00\ud7cb', 90, 100),
  ]
  const out = formatWaterfall(spans, { legend: false })
  const lines = out.slice(0, -1).split('\n').slice(1)
  expect(lines[1]).toContain(`${flags} `)
  expect(lines[2]).toContain(`${marked} `)
  expect(out).not.toContain('~')
  const width = (text: string) =>
    terminalWidth(text) - [...text].filter((c) => c >= '\ud7b0' && c <= '\ud7ff').length
  const columns = lines.map((l) => width(l.slice(0, l.indexOf('|'))))
  expect(columns).toEqual(Array(4).fill(columns[0]))
})
