import { formatWaterfall } from '@hourglass/otel'
import { ROOT_CONTEXT, trace } from '@opentelemetry/api'
import {
  BasicTracerProvider,
  type ReadableSpan,
  type Span,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base'
import { describe, expect, it } from 'vitest'

// Spans a processor collects as they start (what is still running when a
// request hangs) include spans not ended yet: the SDK gives those an end of
// [0, 0]. Drawn as if ended at the epoch, each had a duration of
// -1700000000000.0ms and a one-character bar. Now drawn open, to the last
// time the waterfall knows of, and marked.
//
// The tracer provider is passed explicitly: no OpenTelemetry global is set.

const T0 = 1_700_000_000_000

/** The real SDK, every span kept from its start (ended or not). */
function startedSpans() {
  const started: ReadableSpan[] = []
  const onStart: SpanProcessor = {
    onStart: (span: Span) => {
      started.push(span)
    },
    onEnd: () => {},
    forceFlush: async () => {},
    shutdown: async () => {},
  }
  const provider = new BasicTracerProvider({ spanProcessors: [onStart] })
  return { tracer: provider.getTracer('waterfall'), started }
}

const barOf = (line: string) => line.slice(line.indexOf('|') + 1, line.lastIndexOf('|'))
const durationOf = (line: string) => line.slice(line.lastIndexOf('|') + 1).trim()

describe('formatWaterfall: spans not ended yet', () => {
  it('draws a span not ended yet open to the last time known, its duration at least that, never negative', () => {
    const { tracer, started } = startedSpans()
    const server = tracer.startSpan('GET /quote', { startTime: T0 })
    const inServer = trace.setSpan(ROOT_CONTEXT, server)
    const slice = tracer.startSpan('deadline.slice model', { startTime: T0 + 100 }, inServer)
    slice.end(T0 + 300)
    // Still waiting on its upstream: an event at +450 ms is the last sign of it.
    const call = tracer.startSpan('deadline.egress GET', { startTime: T0 + 350 }, inServer)
    call.addEvent('hourglass.deadline.retry', { 'hourglass.deadline.attempt': 2 }, T0 + 450)

    const text = formatWaterfall(started, { legend: true })
    expect(text).not.toMatch(/-\d/)
    const lines = text.split('\n')
    // The header counts to the last time known: the open call's event.
    expect(lines[0]).toMatch(/ 3 spans {2}450\.0ms$/)
    const serverLine = lines.find((l) => l.includes('GET /quote'))!
    const callLine = lines.find((l) => l.includes('deadline.egress GET'))!
    const sliceLine = lines.find((l) => l.includes('deadline.slice model'))!
    expect(durationOf(serverLine)).toBe('>=450.0ms')
    expect(durationOf(callLine)).toBe('>=100.0ms')
    // The ended slice is drawn as before.
    expect(durationOf(sliceLine)).toBe('200.0ms')
    // Open bars run to the end of the axis, ending in `>`; the ended one in `#`.
    expect(barOf(serverLine)).toMatch(/^#+>$/)
    expect(barOf(callLine)).toMatch(/^ +#*>$/)
    expect(barOf(sliceLine)).toMatch(/^ +#+ +$/)
    expect(text).toContain('> = not ended')
  })

  it('draws a trace of one span not ended yet, and spans that carry no `ended` but an end before their start, as open', () => {
    const { tracer, started } = startedSpans()
    tracer.startSpan('GET /hang', { startTime: T0 })
    const text = formatWaterfall(started, { legend: false })
    const line = text.split('\n')[1]!
    expect(durationOf(line)).toBe('>=0.0ms')
    expect(barOf(line)).toMatch(/^>/)

    // An exporter's plain object, no `ended`, with the SDK's [0, 0] end.
    const plain = {
      name: 'GET /plain',
      spanContext: () => ({ traceId: 'ab'.repeat(16), spanId: 'cd'.repeat(8), traceFlags: 1 }),
      startTime: [T0 / 1000, 0] as [number, number],
      endTime: [0, 0] as [number, number],
      attributes: {},
      status: { code: 0 },
      events: [],
    }
    expect(formatWaterfall([plain], { legend: false })).toContain('>=0.0ms')
    expect(formatWaterfall([plain], { legend: false })).not.toMatch(/-\d/)
  })

  it('leaves a waterfall of ended spans as it was: no mark, no key entry', () => {
    const { tracer, started } = startedSpans()
    const span = tracer.startSpan('GET /done', { startTime: T0 })
    span.end(T0 + 5)
    const text = formatWaterfall(started)
    expect(text).toContain('    5.0ms')
    expect(text).not.toContain('>')
  })
})
