import { formatWaterfall, type WaterfallSpan } from '@hourglass/otel'
import { describe, expect, it } from 'vitest'

const T0 = 1_700_000_000

function span(
  name: string,
  id: string,
  parent: string | undefined,
  ms: [number, number],
  attributes: WaterfallSpan['attributes'] = {},
  traceId = 'a'.repeat(32),
  events: WaterfallSpan['events'] = [],
): WaterfallSpan {
  return {
    name,
    spanContext: () => ({ traceId, spanId: id, traceFlags: 1 }),
    parentSpanContext:
      parent === undefined ? undefined : { traceId, spanId: parent, traceFlags: 1 },
    startTime: [T0, ms[0] * 1e6],
    endTime: [T0, ms[1] * 1e6],
    attributes,
    status: { code: 0 },
    events,
  }
}

/** A 30 s budget: five-digit figures, one more than the room the layout keeps for them. */
const longBudget = [
  span('GET /long', 'r', undefined, [0, 625.3], { 'hourglass.deadline.remaining_ms': 29990 }),
  span('deadline.slice model', 's', 'r', [0, 600], {
    'hourglass.deadline.slice.allotted_ms': 29000,
    'hourglass.deadline.slice.used_ms': 12345,
  }),
]

const rowsOf = (text: string) => text.trimEnd().split('\n').slice(1)
const barOf = (line: string) => /\|([ #>]*)\|/.exec(line)?.[1] ?? ''

describe('formatWaterfall never cuts a figure', () => {
  it('gives wide deadline numbers room by shortening the bar, on every line alike', () => {
    for (const columns of [80, 60]) {
      const rows = rowsOf(formatWaterfall(longBudget, { columns, legend: false }))
      // Cut at the line's end, `left 29990` read `left 299~`, and the slice `12345/29~`.
      expect(rows[0]).toMatch(/ 625\.3ms left 29990$/)
      expect(rows[1]).toMatch(/ 600\.0ms 12345\/29000$/)
      for (const line of rows) expect(line.length).toBeLessThanOrEqual(columns)
      // One time axis: both bars as wide, the labels' column as wide.
      expect(barOf(rows[0] ?? '').length).toBe(barOf(rows[1] ?? '').length)
      expect(rows[0]?.indexOf('|')).toBe(rows[1]?.indexOf('|'))
    }
    // The usual figures keep the usual layout: a 30-character label column, 27-character bar.
    const usual = rowsOf(
      formatWaterfall(
        [span('GET /quote', 'q', undefined, [0, 80], { 'hourglass.deadline.remaining_ms': 1490 })],
        {
          legend: false,
        },
      ),
    )
    expect(usual[0]?.indexOf('|')).toBe(31)
    expect(barOf(usual[0] ?? '')).toHaveLength(27)
  })

  it('leaves out a figure too wide for any layout whole, with ~, never a part of it', () => {
    const huge = [
      span('deadline.slice huge', 'h', undefined, [0, 10], {
        'hourglass.deadline.slice.allotted_ms': 123_456_789_012,
        'hourglass.deadline.slice.used_ms': 123_456_789_012,
      }),
    ]
    const text = formatWaterfall(huge, { columns: 60 })
    const [line] = rowsOf(text)
    expect(line).toMatch(/\| +10\.0ms ~$/)
    expect(line?.length).toBeLessThanOrEqual(60)
    expect(text).toContain('~ = cut to fit')
    // Left out anyway, it narrows no other line: the label column keeps its
    // 30 characters (it shrank to 16, `GET /api/v1/qu~`).
    const beside = rowsOf(
      formatWaterfall(
        [
          span('GET /api/v1/quotes/latest', 'g', undefined, [0, 20], {
            'hourglass.deadline.remaining_ms': 1490,
          }),
          ...huge,
        ],
        { columns: 60, legend: false },
      ),
    )
    expect(beside[0]?.indexOf('|')).toBe(31)
    expect(beside[0]).toContain('GET /api/v1/quotes/latest')
  })

  it('leaves out whole trace ids that do not fit the header, never the span count or the time', () => {
    const spans = 'abcdef1234'
      .split('')
      .map((t, i) => span('GET /x', `i${i}`, undefined, [i, i + 1.5], {}, t.repeat(32)))
    const [head] = formatWaterfall(spans, { legend: false }).split('\n')
    // It was cut to `…,22222222,3~`: no count, no time, and an id of one digit.
    expect(head).toBe(
      'trace aaaaaaaa,bbbbbbbb,cccccccc,dddddddd,eeeeeeee,ffffffff,~  10 spans  10.5ms',
    )
    expect(formatWaterfall(spans)).toContain('~ = cut to fit')
  })

  it('indents an event no further than the label column, so its time is never cut', () => {
    const spans: WaterfallSpan[] = []
    for (let i = 0; i < 40; i++) {
      spans.push(
        span(
          'step',
          `p${i}`,
          i === 0 ? undefined : `p${i - 1}`,
          [0, 400],
          {},
          undefined,
          i === 39
            ? [
                {
                  name: 'hourglass.deadline.exceeded',
                  time: [T0, 250e6],
                  attributes: { 'hourglass.deadline.stage': 'slice' },
                },
              ]
            : [],
        ),
      )
    }
    const rows = rowsOf(formatWaterfall(spans, { legend: false }))
    // Forty levels down the indent alone filled 80 columns: `+250.0ms` was lost.
    expect(rows.at(-1)).toBe(`${' '.repeat(30)}! deadline.exceeded  +250.0ms  stage=slice`)
    // At 60 columns a longer name and time still fit whole: the indent gives way.
    spans[39] = {
      ...spans[39]!,
      events: [{ name: 'hourglass.deadline.retry_skipped', time: [T0, 250e6], attributes: {} }],
    }
    const narrow = rowsOf(formatWaterfall(spans, { columns: 60, legend: false }))
    expect(narrow.at(-1)).toMatch(/^ +! deadline\.retry_skipped {2}\+250\.0ms$/)
    expect(narrow.at(-1)?.length).toBeLessThanOrEqual(60)
  })

  it("cuts a long event name of the user's own (~), never its time", () => {
    // The package's own event names are 23 characters at most; one of yours
    // under `hourglass.deadline.` can be any length. 49 characters at 60
    // columns cut the time to `+1250.~`, and at 80 a longer one lost it whole.
    const name = `hourglass.deadline.${'checkout_inventory_reservation_'.repeat(3)}`
    const spans = [
      span('work', 'w', undefined, [0, 1400], {}, undefined, [
        { name, time: [T0, 1250e6], attributes: { 'hourglass.deadline.stage': 'slice' } },
      ]),
    ]
    for (const columns of [60, 80]) {
      const text = formatWaterfall(spans, { columns })
      const event = text.split('\n')[2] ?? ''
      expect(event).toMatch(/^ *! deadline\.checkout_inventory_reservation_\S*~ {2}\+1250\.0ms$/)
      expect(event).toHaveLength(columns)
      // Its details go on the next line, whole, as any that do not fit.
      expect(text.split('\n')[3]).toMatch(/^ +stage=slice$/)
      // The key says what `~` means (wrapped to the width: read as one line).
      expect(text.replace(/\s+/g, ' ')).toContain('~ = cut to fit')
    }
    // One that fits is drawn whole, as before.
    const short = formatWaterfall(
      [
        span('work', 'w', undefined, [0, 1400], {}, undefined, [
          { name: 'hourglass.deadline.my_own_event', time: [T0, 1250e6] },
        ]),
      ],
      { legend: false },
    )
    expect(short.split('\n')[2]).toBe('  ! deadline.my_own_event  +1250.0ms')
  })

  it('cuts a name with an emoji at the cut before the emoji, never half of it (a lone surrogate)', () => {
    // A half of a surrogate pair is no text: a terminal shows `�`, and a
    // log shipper may refuse the line. An emoji is two UTF-16 units.
    const LONE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/
    // At 60 columns an event at `+1250.0ms` leaves 47 for its name: kept to 46 units, `~`.
    const event = `hourglass.deadline.${'x'.repeat(36)}${'😀'.repeat(8)}`
    // The label column is 30 wide at 60 columns: cut to 29 units and `~`,
    // a pair straddling unit 29 for one length, not for the next.
    const labels = [20, 21].map((n) => `${'y'.repeat(n)}${'😀'.repeat(15)}`)
    const spans = [
      span('work', 'w', undefined, [0, 1400], {}, undefined, [{ name: event, time: [T0, 1250e6] }]),
      ...labels.map((name, i) => span(name, `l${i}`, undefined, [0, 1400])),
    ]
    const text = formatWaterfall(spans, { columns: 60, legend: false })
    const lines = text.trimEnd().split('\n')
    expect(LONE.test(text)).toBe(false)
    expect(lines[2]).toMatch(/^ *! deadline\.x{36}~ {2}\+1250\.0ms$/)
    expect(lines[3]).toMatch(/^ y{20}(😀)+~ +\|/)
    expect(lines[4]).toMatch(/^ y{21}(😀)+~ +\|/)
    // A label kept a unit short is padded: every bar starts in one column.
    const bars = [lines[1], lines[3], lines[4]].map((line) => line?.indexOf('|'))
    expect(new Set(bars).size).toBe(1)
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(60)
  })
})
