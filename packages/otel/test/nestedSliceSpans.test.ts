import { Deadline, ManualClock } from '@hourglass/core'
import { instrumentDeadlines, type StopInstrumentation } from '@hourglass/otel'
import { context, type Span, trace } from '@opentelemetry/api'
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { setupOtel, spanNamed } from './helpers/otel.js'

/**
 * A plan made inside a slice (`slice.plan(…)`: a step split into steps of its
 * own) is part of that slice: its slices' spans are children of the
 * enclosing slice's span, as the deadlines are, so a trace shows the step
 * inside the step it belongs to. Before, every slice span was a child of the
 * span active when it started (the request's), and a nested slice was drawn
 * beside the slice it ran in, its allotment read as a share of the request.
 * Core ends the inner slice first when both end together: a child span never
 * ends after its parent.
 */

let otel: ReturnType<typeof setupOtel>
let stop: StopInstrumentation

beforeEach(() => {
  otel = setupOtel()
  stop = instrumentDeadlines({
    tracerProvider: otel.tracerProvider,
    meterProvider: otel.meterProvider,
  })
})
afterEach(async () => {
  stop()
  await otel.shutdown()
})

const idOf = (span: ReadableSpan | Span) => span.spanContext().spanId
const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId

/** Runs `fn` with `span` active. */
function within<T>(span: Span, fn: () => T): T {
  return context.with(trace.setSpan(context.active(), span), fn)
}

describe('the span of a slice of a plan made inside a slice', () => {
  it('is a child of the enclosing slice’s span, at every depth', async () => {
    const request = otel.tracer.startSpan('GET /quote')
    const deadline = Deadline.after(1000, { clock: new ManualClock() })
    await within(request, () =>
      deadline
        .plan({ outer: 1, after: 1 }, { reserveMs: 0 })
        .run('outer', (_s, outer) =>
          outer
            .plan({ middle: 1 }, { reserveMs: 0 })
            .run('middle', (_t, middle) =>
              middle.plan({ inner: 1 }, { reserveMs: 0 }).run('inner', () => 'done'),
            ),
        ),
    )
    request.end()
    deadline.dispose()
    const spans = otel.exporter.getFinishedSpans()
    const outer = spanNamed(spans, 'deadline.slice outer')
    const middle = spanNamed(spans, 'deadline.slice middle')
    const inner = spanNamed(spans, 'deadline.slice inner')
    expect(parentOf(outer)).toBe(idOf(request))
    expect(parentOf(middle)).toBe(idOf(outer))
    expect(parentOf(inner)).toBe(idOf(middle))
  })

  it('with no span active (a deadline of its own, outside any request): the enclosing slice is the parent', async () => {
    const deadline = Deadline.after(1000, { clock: new ManualClock() })
    await deadline.plan({ outer: 1 }, { reserveMs: 0 }).run('outer', (_s, outer) =>
      outer
        .child(500)
        .plan({ inner: 1 }, { reserveMs: 0 })
        .run('inner', () => 'done'),
    )
    deadline.dispose()
    const spans = otel.exporter.getFinishedSpans()
    const outer = spanNamed(spans, 'deadline.slice outer')
    expect(parentOf(outer)).toBeUndefined()
    expect(parentOf(spanNamed(spans, 'deadline.slice inner'))).toBe(idOf(outer))
  })

  it('ending together (time ran out): each child ends before its parent', async () => {
    const clock = new ManualClock()
    const request = otel.tracer.startSpan('GET /quote')
    const deadline = Deadline.after(100, { clock })
    let started: () => void = () => {}
    const innermost = new Promise<void>((resolve) => {
      started = resolve
    })
    const outcome = within(request, () =>
      deadline.plan({ outer: 1 }, { reserveMs: 0 }).run('outer', (_s, outer) =>
        outer.plan({ inner: 1 }, { reserveMs: 0 }).run('inner', () => {
          started()
          return new Promise<never>(() => {})
        }),
      ),
    ).catch((error: unknown) => error)
    await innermost
    clock.advance(100)
    await outcome
    const spans = await otel.spansWhere((s) => s.some((x) => x.name === 'deadline.slice outer'))
    request.end()
    const names = spans.map((s) => s.name)
    expect(names.indexOf('deadline.slice inner')).toBeLessThan(
      names.indexOf('deadline.slice outer'),
    )
    const outer = spanNamed(spans, 'deadline.slice outer')
    const inner = spanNamed(spans, 'deadline.slice inner')
    expect(parentOf(inner)).toBe(idOf(outer))
    expect(inner.attributes['hourglass.deadline.slice.outcome']).toBe('exceeded')
    expect(outer.attributes['hourglass.deadline.slice.outcome']).toBe('exceeded')
  })

  it('stays a child of a span of yours made active inside the enclosing slice (never replaced)', async () => {
    const request = otel.tracer.startSpan('GET /quote')
    const deadline = Deadline.after(1000, { clock: new ManualClock() })
    let mine: Span | undefined
    await within(request, () =>
      deadline.plan({ outer: 1 }, { reserveMs: 0 }).run('outer', (_s, outer) => {
        mine = otel.tracer.startSpan('my work')
        return within(mine, () =>
          outer.plan({ inner: 1 }, { reserveMs: 0 }).run('inner', () => 'done'),
        )
      }),
    )
    mine?.end()
    request.end()
    deadline.dispose()
    const spans = otel.exporter.getFinishedSpans()
    expect(parentOf(spanNamed(spans, 'deadline.slice inner'))).toBe(idOf(mine as Span))
  })

  it('a slice of a plan made beside it (not inside) stays a child of the active span', async () => {
    const request = otel.tracer.startSpan('GET /quote')
    const deadline = Deadline.after(1000, { clock: new ManualClock() })
    const plan = deadline.plan({ first: 1, second: 1 }, { reserveMs: 0 })
    await within(request, async () => {
      await plan.run('first', () => 'a')
      await plan.run('second', () => 'b')
    })
    request.end()
    deadline.dispose()
    const spans = otel.exporter.getFinishedSpans()
    expect(parentOf(spanNamed(spans, 'deadline.slice first'))).toBe(idOf(request))
    expect(parentOf(spanNamed(spans, 'deadline.slice second'))).toBe(idOf(request))
  })

  it('a plan made inside a slice that has already ended: a child of the active span', async () => {
    const request = otel.tracer.startSpan('GET /quote')
    const deadline = Deadline.after(1000, { clock: new ManualClock() })
    const plan = deadline.plan({ outer: 1 }, { reserveMs: 0 })
    const outer = plan.slice('outer')
    plan.end('outer')
    await within(request, () =>
      outer.plan({ late: 1 }, { reserveMs: 0 }).run('late', () => 'x'),
    ).catch(() => {})
    request.end()
    deadline.dispose()
    const spans = otel.exporter.getFinishedSpans()
    expect(parentOf(spanNamed(spans, 'deadline.slice late'))).toBe(idOf(request))
  })
})
