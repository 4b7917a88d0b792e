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
