import { formatWaterfall } from '@hourglass/otel'
import { expect, it } from 'vitest'

// The waterfall is drawn on a terminal, from span names and attributes that
// are not all the drawer's own: a slice named by the app, a span of another
// instrumentation, an event's slice or reason. A line break in one drew the
// rest of its row (its bar, its figures) on a line of its own; a carriage
// return or an escape sequence (ESC [31m) moved the cursor or coloured the
// terminal. Written as their JSON escapes (core's escapeUnprintable, what
// every package shows untrusted text with), each span keeps one line and
// its bar the column of the others.

const T0 = 1_700_000_000
const ms = (n: number): [number, number] => [T0, n * 1e6]
const context = (spanId: string) => () => ({ traceId: 'ab'.repeat(16), spanId, traceFlags: 1 })

const root = {
  name: 'GET',
  spanContext: context('01'.repeat(8)),
  startTime: ms(0),
  endTime: ms(90),
  attributes: { 'url.path': '/a\nb\r' },
  status: { code: 0 },
  events: [],
}
const slice = {
  name: 'deadline.slice \u001b[31mb',
  spanContext: context('02'.repeat(8)),
  parentSpanContext: { traceId: 'ab'.repeat(16), spanId: '01'.repeat(8), traceFlags: 1 },
  startTime: ms(10),
  endTime: ms(80),
  attributes: {},
  status: { code: 0 },
  events: [
    {
      name: 'hourglass.deadline.exceeded\n',
      time: ms(50),
      attributes: { 'hourglass.deadline.stage': 'slice', 'hourglass.deadline.slice': 'x\ny' },
    },
  ],
}

it('writes control characters in names and event details as escapes: one line per span, bars aligned', () => {
  const text = formatWaterfall([root, slice], { legend: false })
  // No control character reaches the terminal (the trailing newline ends the text).
  expect(text).not.toContain('\r')
  expect(text).not.toContain('\u001b')
  const lines = text.slice(0, -1).split('\n')
  // The header, the two spans and the event: nothing spilled onto a line of its own.
  expect(lines).toHaveLength(4)
  expect(lines[1]).toContain('GET /a\\nb\\r')
  expect(lines[2]).toContain('deadline.slice \\u001b[31mb')
  expect(lines[3]).toContain('deadline.exceeded\\n')
  expect(lines[3]).toContain('slice=x\\ny')
  // Both bars start in the same column.
  expect(lines[1]!.indexOf('|')).toBe(lines[2]!.indexOf('|'))
})

it('cuts a label, an event name or a detail after a whole escape, never inside one', () => {
  const path = {
    ...root,
    attributes: { 'url.path': `/${'\u001b'.repeat(40)}`, 'hourglass.deadline.remaining_ms': 500 },
  }
  // A backslash of the name's own before a bell: `C:\` then `\u0007`, the
  // text alone cannot tell which backslash starts the escape.
  const bells = {
    ...slice,
    name: `deadline.slice C:\\${'\u0007'.repeat(10)}`,
    events: [
      {
        name: `hourglass.deadline.${'\n'.repeat(60)}`,
        time: ms(50),
        attributes: { 'hourglass.deadline.retry.reason': '\u0000'.repeat(20) },
      },
    ],
  }
  const lines = formatWaterfall([path, bells], { legend: false }).slice(0, -1).split('\n')
  // Before, each was cut mid-escape: `\u001b\u001~`, `C:\\u0007\u~`, `\n\~`, `\u0000\u~`.
  expect(lines[1]).toMatch(/^ GET \/(\\u001b){3}~ +\|/)
  expect(lines[2]).toMatch(/^ {3}deadline\.slice C:\\\\u0007~ +\|/)
  // The event's indent gives way to its long name (`room`).
  expect(lines[3]).toBe(` ! deadline.${'\\n'.repeat(29)}~  +50.0ms`)
  expect(lines[4]).toBe(`     reason=${'\\u0000'.repeat(11)}~`)
  // Cut a few columns short, the labels are padded: both bars start in one column.
  expect(lines[1]!.indexOf('|')).toBe(lines[2]!.indexOf('|'))
  for (const line of lines) expect(line.length).toBeLessThanOrEqual(80)
})
