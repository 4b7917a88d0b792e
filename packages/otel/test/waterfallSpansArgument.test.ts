import { formatWaterfall, printWaterfall } from '@hourglass/otel'
import { describe, expect, it } from 'vitest'

// The spans argument is checked as the options are: the exporter's method
// passed uncalled (`printWaterfall(exporter.getFinishedSpans)`, a function of
// length 0) drew "(no spans)" over a trace that had spans, and undefined, a
// Set or an object failed deep inside ("Cannot read properties of undefined
// (reading 'length')", "spans.map is not a function").

const T0 = 1_700_000_000_000
const span = {
  name: 'GET /quote',
  spanContext: () => ({ traceId: 'ab'.repeat(16), spanId: 'cd'.repeat(8), traceFlags: 1 }),
  startTime: [T0 / 1000, 0] as [number, number],
  endTime: [T0 / 1000, 5_000_000] as [number, number],
  attributes: {},
  status: { code: 0 },
  events: [],
}
const getFinishedSpans = () => [span]

describe('formatWaterfall spans', () => {
  it.each([
    [
      'the exporter method, not called',
      getFinishedSpans,
      /got a function getFinishedSpans: call it/,
    ],
    ['undefined', undefined, /got undefined/],
    ['a Set', new Set([span]), /got an object/],
    ['an object holding them', { spans: [span] }, /got an object/],
  ])('refuses %s with a TypeError naming what it got', (_, spans, message) => {
    expect(() => formatWaterfall(spans as never)).toThrow(TypeError)
    expect(() => formatWaterfall(spans as never)).toThrow(
      /^formatWaterfall: spans must be an array of spans \(exporter\.getFinishedSpans\(\)\)/,
    )
    expect(() => formatWaterfall(spans as never)).toThrow(message)
    const written: string[] = []
    expect(() => printWaterfall(spans as never, (text) => written.push(text))).toThrow(TypeError)
    expect(written).toEqual([])
  })

  it('refuses an entry that is no span, naming its index', () => {
    expect(() => formatWaterfall([span, undefined] as never)).toThrow(
      new TypeError('formatWaterfall: spans[1] must be a span (a ReadableSpan), got undefined'),
    )
  })

  it('still draws an array of spans, and says "(no spans)" for an empty one', () => {
    expect(formatWaterfall(getFinishedSpans(), { legend: false })).toContain('GET /quote')
    expect(formatWaterfall([])).toBe('(no spans)\n')
  })
})
