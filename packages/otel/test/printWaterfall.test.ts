import { formatWaterfall, printWaterfall } from '@hourglass/otel'
import { context, SpanStatusCode, trace } from '@opentelemetry/api'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { setupOtel } from './helpers/otel.js'

let otel: ReturnType<typeof setupOtel>
beforeEach(() => {
  otel = setupOtel()
})
afterEach(() => otel.shutdown())

const T0 = 1_700_000_000_000

/** One request, 1 s long: a slice in the first 400 ms, an upstream call that ran out after it. */
function recordTrace() {
  const server = otel.tracer.startSpan('GET /quote', {
    startTime: T0,
    attributes: { 'hourglass.deadline.remaining_ms': 1000 },
  })
  const inServer = trace.setSpan(context.active(), server)
  const slice = otel.tracer.startSpan(
    'deadline.slice preprocess',
    {
      startTime: T0,
      attributes: {
        'hourglass.deadline.slice.allotted_ms': 250,
        'hourglass.deadline.slice.used_ms': 400,
      },
    },
    inServer,
  )
  slice.setStatus({ code: SpanStatusCode.ERROR })
  slice.addEvent(
    'hourglass.deadline.exceeded',
    { 'hourglass.deadline.stage': 'slice', 'hourglass.deadline.slice': 'preprocess' },
    T0 + 250,
  )
  slice.addEvent('unrelated.event', {}, T0 + 300)
  slice.end(T0 + 400)
  const upstream = otel.tracer.startSpan(
    'deadline.egress GET with a name far too long for the label column',
    { startTime: T0 + 500, attributes: { 'hourglass.deadline.remaining_ms': 499.6 } },
    inServer,
  )
  upstream.end(T0 + 1000)
  server.end(T0 + 1000)
  return otel.exporter.getFinishedSpans()
}

describe('formatWaterfall', () => {
  it('draws one line per span in tree order on a shared time axis, within 80 columns', () => {
    const text = formatWaterfall(recordTrace(), { legend: false })
    const lines = text.trimEnd().split('\n')
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(80)
    expect(lines[0]).toMatch(/^trace [0-9a-f]{8} {2}3 spans {2}1000\.0ms$/)
    const rows = lines.slice(1)
    expect(rows.map((l) => l.slice(0, 30).trimEnd())).toEqual([
      ' GET /quote',
      '  !deadline.slice preprocess',
      '    ! deadline.exceeded  +250.',
      '   deadline.egress GET with a~',
    ])
    const bars = [rows[0], rows[1], rows[3]].map((l) => /\|([ #]+)\|/.exec(l ?? '')?.[1] ?? '')
    const width = bars[0]?.length ?? 0
    expect(bars[0]).toBe('#'.repeat(width))
    // The slice covers the first 40 %, the upstream call the second half.
    expect(bars[1]?.indexOf('#')).toBe(0)
    expect(bars[1]?.lastIndexOf('#')).toBe(Math.ceil(width * 0.4) - 1)
    expect(bars[2]?.indexOf('#')).toBe(Math.floor(width * 0.5))
    expect(bars[2]?.trimEnd().length).toBe(width)
  })

  it('shows the deadline numbers and the deadline events, and nothing else', () => {
    const text = formatWaterfall(recordTrace())
    expect(text).toContain('1000.0ms left 1000')
    expect(text).toContain('400.0ms 400/250')
    expect(text).toContain('500.0ms left 500')
    expect(text).toContain('! deadline.exceeded  +250.0ms  stage=slice slice=preprocess')
    expect(text).not.toContain('unrelated.event')
  })

  it('ends with a key to the labels it drew — the header, left, used/allotted, !, +ms, the event keys, ~ — and only those', () => {
    const text = formatWaterfall(recordTrace())
    const [drawing, key] = text.split('\n\n') as [string, string]
    expect(drawing.split('\n')).toHaveLength(5)
    expect(key.startsWith('key: ')).toBe(true)
    for (const line of key.trimEnd().split('\n')) expect(line.length).toBeLessThanOrEqual(80)
    const said = key.replace(/\n {2}/g, ' ')
    for (const label of [
      'trace = id prefix, spans, first start to last end',
      'left = ms left at start',
      'used/allotted = slice ms',
      '! = failed span or deadline event',
      '+ms = since the first start',
      'stage = where time ran out',
      'slice = slice running',
      '~ = cut to fit',
    ]) {
      expect(said).toContain(label)
    }
    // No retry, no action in this trace: not explained.
    for (const label of ['attempt =', 'why =', 'reason =', 'action =']) {
      expect(said).not.toContain(label)
    }

    // A trace with no events and no slices needs a single line of key.
    otel.exporter.reset()
    otel.tracer
      .startSpan('GET /ok', { attributes: { 'hourglass.deadline.remaining_ms': 90 } })
      .end()
    const plain = formatWaterfall(otel.exporter.getFinishedSpans()).trimEnd().split('\n')
    expect(plain.at(-1)).toBe(
      'key: trace = id prefix, spans, first start to last end; left = ms left at start',
    )
    expect(plain.at(-2)).toBe('')
  })

  it('explains the retry keys when a retry event is drawn', () => {
    const span = otel.tracer.startSpan('deadline.egress GET')
    span.addEvent('hourglass.deadline.retry_skipped', {
      'hourglass.deadline.attempt': 1,
      'hourglass.deadline.retry.why': 'no-budget',
      'hourglass.deadline.retry.reason': 'CONNECT_TIMEOUT',
    })
    span.end()
    const text = formatWaterfall(otel.exporter.getFinishedSpans(), { columns: 200 })
    expect(text).toContain('! deadline.retry_skipped')
    expect(text.trimEnd().split('\n').at(-1)).toBe(
      'key: trace = id prefix, spans, first start to last end; ! = failed span or deadline event; +ms = since the first start; attempt = 1 for the first; why = why not retried; reason = failure retried',
    )
  })

  it('wraps an event’s details that do not fit the line under it, none cut', () => {
    const span = otel.tracer.startSpan('deadline.egress GET')
    span.addEvent('hourglass.deadline.retry_skipped', {
      'hourglass.deadline.attempt': 1,
      'hourglass.deadline.retry.why': 'upstream-deadline',
      'hourglass.deadline.retry.reason': 'HTTP_504',
    })
    span.end()
    const lines = formatWaterfall(otel.exporter.getFinishedSpans(), { legend: false })
      .trimEnd()
      .split('\n')
    const at = lines.findIndex((l) => l.includes('! deadline.retry_skipped'))
    // 87 characters on one line: cut at 80, it read `reason=~`.
    expect(lines[at]).toMatch(
      /^ {2}! deadline\.retry_skipped {2}\+\S+ms {2}attempt=1 why=upstream-deadline$/,
    )
    expect(lines[at + 1]).toBe('      reason=HTTP_504')
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(80)
    expect(lines.join('\n')).not.toContain('~')
    // Wide enough, one line, as before.
    const wide = formatWaterfall(otel.exporter.getFinishedSpans(), { columns: 120, legend: false })
    expect(wide).toMatch(/attempt=1 why=upstream-deadline reason=HTTP_504\n/)
  })

  it('names an HTTP span that carries only its method by its path too', () => {
    otel.tracer.startSpan('GET', { attributes: { 'url.path': '/price' } }).end()
    expect(formatWaterfall(otel.exporter.getFinishedSpans()).split('\n')[1]).toMatch(
      /^ GET \/price +\|/,
    )
  })

  it('refuses a columns that is no finite number, naming it, and draws a whole exporter’s worth of spans', () => {
    const spans = recordTrace()
    expect(() => formatWaterfall(spans, { columns: Number.POSITIVE_INFINITY })).toThrow(
      new RangeError(
        'formatWaterfall: columns must be a finite number of characters, got Infinity',
      ),
    )
    expect(() => formatWaterfall(spans, { columns: Number.NaN })).toThrow(RangeError)
    expect(() => formatWaterfall(spans, { columns: '120' as never })).toThrow(TypeError)
    const [server] = spans.filter((s) => s.name === 'GET /quote')
    // 150 000 spans (a load test's exporter): no stack overflow, one line each.
    const many = Array.from({ length: 150_000 }, () => server as (typeof spans)[number])
    expect(formatWaterfall(many, { legend: false }).split('\n')).toHaveLength(150_000 + 2)
    // A span listed as its own parent (ids repeated) is drawn once, not forever.
    const own = {
      ...server,
      spanContext: server?.spanContext,
      parentSpanContext: server?.spanContext(),
    }
    expect(formatWaterfall([server, own] as never, { legend: false }).split('\n')).toHaveLength(4)
  })

  it('draws the tree of spans from an OpenTelemetry SDK 1.x too (parentSpanId, no parentSpanContext)', () => {
    const v1 = recordTrace().map((s) => ({
      name: s.name,
      spanContext: () => s.spanContext(),
      parentSpanId: s.parentSpanContext?.spanId,
      startTime: s.startTime,
      endTime: s.endTime,
      attributes: s.attributes,
      status: s.status,
      events: s.events,
    }))
    const rows = formatWaterfall(v1, { legend: false }).trimEnd().split('\n').slice(1)
    expect(rows.map((l) => l.slice(0, 30).trimEnd())).toEqual([
      ' GET /quote',
      '  !deadline.slice preprocess',
      '    ! deadline.exceeded  +250.',
      '   deadline.egress GET with a~',
    ])
  })

  it('draws every span it counts, those whose parents form a loop too (no root among them)', () => {
    const spans = recordTrace()
    const [server, slice] = ['GET /quote', 'deadline.slice preprocess'].map(
      (name) => spans.find((s) => s.name === name)!,
    ) as [(typeof spans)[number], (typeof spans)[number]]
    // Alone and listed as its own parent: the header said "1 spans" over an empty drawing.
    const own = {
      ...server,
      spanContext: server.spanContext,
      parentSpanContext: server.spanContext(),
    }
    const alone = formatWaterfall([own] as never, { legend: false })
      .trimEnd()
      .split('\n')
    expect(alone.slice(1).map((l) => l.slice(0, 30).trimEnd())).toEqual([' GET /quote'])
    // Two spans each the other's parent (ids reused across exports): both drawn, once each.
    const a = { ...server, spanContext: server.spanContext, parentSpanContext: slice.spanContext() }
    const b = { ...slice, spanContext: slice.spanContext, parentSpanContext: server.spanContext() }
    const rows = formatWaterfall([a, b] as never, { legend: false })
      .trimEnd()
      .split('\n')
      .slice(1)
    expect(rows.map((l) => l.slice(0, 30).trimEnd())).toEqual([
      ' GET /quote',
      '  !deadline.slice preprocess',
      '    ! deadline.exceeded  +250.',
    ])
  })

  it('draws a span that hangs under a parent loop once, under the loop, even when it started first', () => {
    const span = (name: string, id: string, parent: string | undefined, startMs: number) => ({
      name,
      spanContext: () => ({ traceId: 't'.repeat(32), spanId: id, traceFlags: 1 }),
      parentSpanContext:
        parent === undefined
          ? undefined
          : { traceId: 't'.repeat(32), spanId: parent, traceFlags: 1 },
      startTime: [0, startMs * 1e6],
      endTime: [0, (startMs + 10) * 1e6],
      status: { code: 0 },
      attributes: {},
      events: [],
    })
    const rows = formatWaterfall(
      [
        span('root', 'r', undefined, 0),
        span('loop-a', 'a', 'b', 20),
        span('loop-b', 'b', 'a', 30),
        span('child-of-a', 'c', 'a', 5),
      ] as never,
      { legend: false },
    )
      .trimEnd()
      .split('\n')
      .slice(1)
      .map((l) => l.slice(0, 30).trimEnd())
    expect(rows).toEqual([' root', ' loop-a', '   child-of-a', '   loop-b'])
  })

  it('says so when there is nothing to draw, and prints through the writer it is given', () => {
    expect(formatWaterfall([])).toBe('(no spans)\n')
    const out: string[] = []
    printWaterfall(recordTrace(), (t) => out.push(t), { columns: 120 })
    expect(out).toHaveLength(1)
    expect(Math.max(...(out[0] ?? '').split('\n').map((l) => l.length))).toBeGreaterThan(80)
  })
})
