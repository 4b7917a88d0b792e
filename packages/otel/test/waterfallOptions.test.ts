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
