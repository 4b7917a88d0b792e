import { formatWaterfall, printWaterfall } from '@hourglass/otel'
import { describe, expect, it } from 'vitest'

// formatWaterfall's options are refused when misspelt, as every other
// options object of the packages is (createFetch, deadline(), the
// DeadlinePropagator…): ignored, `{ colums: 60 }` drew 80 columns, and
// `{ legnd: false }` the key, without a word.

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

describe('formatWaterfall options', () => {
  it.each([
    [
      { colums: 60 },
      'unknown option "colums" (did you mean columns?); formatWaterfall() takes columns, legend',
    ],
    [
      { legnd: false },
      'unknown option "legnd" (did you mean legend?); formatWaterfall() takes columns, legend',
    ],
  ])('refuses the misspelt %o with a TypeError naming the option meant', (options, message) => {
    expect(() => formatWaterfall([span], options as never)).toThrow(new TypeError(message))
    // printWaterfall hands its options on: refused before anything is written.
    const written: string[] = []
    expect(() => printWaterfall([span], (text) => written.push(text), options as never)).toThrow(
      TypeError,
    )
    expect(written).toEqual([])
  })

  it('refuses options that are not an object, even with no spans to draw', () => {
    expect(() => formatWaterfall([], 60 as never)).toThrow(
      new TypeError('formatWaterfall(): options must be an object, got 60'),
    )
  })

  it.each([
    ["'false'", 'false', "'false' (a string)"],
    ['0', 0, '0'],
  ])('refuses a legend of %s with a TypeError: only false leaves the key out', (_, legend, got) => {
    expect(() => formatWaterfall([span], { legend } as never)).toThrow(
      new TypeError(`formatWaterfall: legend must be true or false, got ${got}`),
    )
  })

  it('still takes its own options, and none', () => {
    const line = (text: string) => text.split('\n')[1]!
    const wide = formatWaterfall([span], { columns: 120, legend: false })
    expect(line(wide).length).toBeGreaterThan(line(formatWaterfall([span])).length)
    expect(wide).not.toContain('key:')
    expect(formatWaterfall([span])).toContain('key:')
  })
})

describe('formatWaterfall columns: at most 1000', () => {
  // Every line's bar is as wide as `columns` asks, and nothing bounded it:
  // 2e8 built a 400 MB waterfall of two spans in 3 s, and 1e9 threw
  // "Invalid string length" from deep inside. Cut to 1000, as below 60 is
  // raised to 60.
  const widest = (text: string) => Math.max(...text.split('\n').map((line) => line.length))

  it.each([1e9, 10_000, 1001])('draws %d columns as 1000', (columns) => {
    const text = formatWaterfall([span], { columns })
    expect(widest(text)).toBeLessThanOrEqual(1000)
    expect(text).toBe(formatWaterfall([span], { columns: 1000 }))
  })

  it('draws up to 1000 columns as asked', () => {
    const line = (text: string) => text.split('\n')[1]!
    // The bar ends one column before the duration: the line is as wide as the bar.
    expect(line(formatWaterfall([span], { columns: 1000, legend: false }))).toHaveLength(
      line(formatWaterfall([span], { columns: 999, legend: false })).length + 1,
    )
  })
})

describe('printWaterfall write', () => {
  // formatWaterfall takes its options second, printWaterfall third: given
  // second, `{ columns: 120 }` failed with "write is not a function", and a
  // stream (`process.stdout`) the same, naming neither.
  it.each([
    [
      'options given where write goes',
      { columns: 120 },
      'printWaterfall: write must be a function (text) => unknown, got an object; options go third: printWaterfall(spans, undefined, options)',
    ],
    [
      'a stream given for its write method',
      process.stdout,
      'printWaterfall: write must be a function (text) => unknown, got an object; options go third: printWaterfall(spans, undefined, options)',
    ],
    [
      'a string',
      'stdout',
      "printWaterfall: write must be a function (text) => unknown, got 'stdout' (a string)",
    ],
  ])('refuses %s with a TypeError saying so, before anything is drawn', (_, write, message) => {
    expect(() => printWaterfall([span], write as never)).toThrow(new TypeError(message))
  })

  it('still writes through the function given, and to stdout by default', () => {
    const written: string[] = []
    printWaterfall([span], (text) => written.push(text), { legend: false })
    expect(written).toEqual([formatWaterfall([span], { legend: false })])
  })
})
