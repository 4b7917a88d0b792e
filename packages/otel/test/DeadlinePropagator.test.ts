import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { Metadata } from '@grpc/grpc-js'
import { ClientClosedError, Deadline, ManualClock, runWithDeadline } from '@hourglass/core'
import {
  DEADLINE_CONTEXT_KEY,
  DeadlinePropagator,
  type PropagatedDeadline,
  remainingIn,
} from '@hourglass/otel'
import {
  context,
  defaultTextMapGetter,
  propagation,
  ROOT_CONTEXT,
  type TextMapSetter,
  trace,
} from '@opentelemetry/api'
import { CompositePropagator, W3CTraceContextPropagator } from '@opentelemetry/core'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { setupOtel } from './helpers/otel.js'

let otel: ReturnType<typeof setupOtel>
let clock: ManualClock

beforeEach(() => {
  otel = setupOtel()
  clock = new ManualClock()
  propagation.setGlobalPropagator(
    new CompositePropagator({
      propagators: [new W3CTraceContextPropagator(), new DeadlinePropagator({ clock })],
    }),
  )
})
afterEach(() => otel.shutdown())

function injected(ctx = context.active()): Record<string, string> {
  const headers: Record<string, string> = {}
  propagation.inject(ctx, headers)
  return headers
}

describe('DeadlinePropagator', () => {
  it('injects the whole ms left on the current Hourglass deadline, next to traceparent', () => {
    const deadline = Deadline.after(1000, { clock })
    const span = otel.tracer.startSpan('client')
    const headers = context.with(trace.setSpan(context.active(), span), () =>
      runWithDeadline(deadline, () => {
        clock.advance(250.6)
        return injected()
      }),
    )
    span.end()
    expect(headers['x-deadline-remaining-ms']).toBe('749')
    expect(headers.traceparent).toContain(span.spanContext().traceId)
  })

  it('extracts the inbound budget into the Context and injects what is left of it later', () => {
    const inbound = {
      traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
      'x-deadline-remaining-ms': '800',
    }
    const ctx = propagation.extract(ROOT_CONTEXT, inbound)
    const stored = ctx.getValue(DEADLINE_CONTEXT_KEY) as PropagatedDeadline
    expect(stored).toMatchObject({ budgetMs: 800, source: 'x-deadline-remaining-ms' })
    expect(trace.getSpanContext(ctx)?.traceId).toBe('0af7651916cd43dd8448eb211c80319c')

    clock.advance(120)
    expect(injected(ctx)['x-deadline-remaining-ms']).toBe('680')
    clock.advance(5000)
    expect(injected(ctx)['x-deadline-remaining-ms']).toBe('0')
  })

  it('clamps an inbound budget to 30 s by default, as every ingress does (the header is untrusted); Infinity lifts the cap', () => {
    const getter = {
      get: (c: Record<string, string>, k: string) => c[k],
      keys: (c: Record<string, string>) => Object.keys(c),
    }
    const week = { 'x-deadline-remaining-ms': String(7 * 24 * 3600 * 1000) }
    const budget = (p: DeadlinePropagator) =>
      p.extract(ROOT_CONTEXT, week, getter).getValue(DEADLINE_CONTEXT_KEY) as PropagatedDeadline
    expect(budget(new DeadlinePropagator({ clock }))).toMatchObject({
      budgetMs: 30_000,
      clamped: true,
    })
    expect(budget(new DeadlinePropagator({ clock, maxMs: Infinity }))).toMatchObject({
      budgetMs: 7 * 24 * 3600 * 1000,
      clamped: false,
    })
  })

  it('reads the smallest valid source, clamps to maxMs, and ignores malformed or repeated values', () => {
    const p = new DeadlinePropagator({ clock, maxMs: 500 })
    const getter = {
      get: (c: Record<string, string | string[]>, k: string) => c[k],
      keys: (c: Record<string, string | string[]>) => Object.keys(c),
    }
    const budget = (carrier: Record<string, string | string[]>) =>
      (p.extract(ROOT_CONTEXT, carrier, getter).getValue(DEADLINE_CONTEXT_KEY) as
        | PropagatedDeadline
        | undefined) ?? null

    expect(budget({ 'x-deadline-remaining-ms': '400', 'grpc-timeout': '300m' })).toMatchObject({
      budgetMs: 300,
      source: 'grpc-timeout',
      clamped: false,
    })
    expect(budget({ 'x-deadline-remaining-ms': '9000' })).toMatchObject({
      budgetMs: 500,
      clamped: true,
    })
    // A negative value is a deadline already past, as readDeadline reads it.
    expect(budget({ 'x-deadline-remaining-ms': '-5' })).toMatchObject({ budgetMs: 0 })
    expect(budget({ 'x-deadline-remaining-ms': 'soon' })).toBeNull()
    expect(budget({ 'x-deadline-remaining-ms': ['100', '200'] })).toBeNull()
    expect(budget({})).toBeNull()
    const none = new DeadlinePropagator({ sources: [] })
    expect(
      none
        .extract(ROOT_CONTEXT, { 'x-deadline-remaining-ms': '100' }, getter)
        .getValue(DEADLINE_CONTEXT_KEY),
    ).toBeUndefined()
  })

  it('reads a number in a carrier record as readDeadline does, through the default getter', () => {
    const p = new DeadlinePropagator({ clock, maxMs: 500 })
    const budget = (carrier: Record<string, unknown>) =>
      (p.extract(ROOT_CONTEXT, carrier, defaultTextMapGetter).getValue(DEADLINE_CONTEXT_KEY) as
        | PropagatedDeadline
        | undefined) ?? null
    // A record built in code (a job's or a message's headers): "value.join
    // is not a function", read as an unreadable header, so no deadline,
    // where readDeadline and every ingress read the number.
    expect(budget({ 'x-deadline-remaining-ms': 400 })).toMatchObject({ budgetMs: 400 })
    expect(budget({ 'x-deadline-remaining-ms': [300] })).toMatchObject({ budgetMs: 300 })
    expect(budget({ 'x-deadline-remaining-ms': 9000 })).toMatchObject({
      budgetMs: 500,
      clamped: true,
    })
    expect(budget({ 'x-deadline-remaining-ms': [100, 200] })).toBeNull()
    expect(budget({ 'x-deadline-remaining-ms': -5 })).toMatchObject({ budgetMs: 0 })
    expect(budget({ 'x-deadline-remaining-ms': {} })).toBeNull()
  })

  it('injects the tighter of the Context deadline and the current deadline', () => {
    const ctx = ROOT_CONTEXT.setValue(DEADLINE_CONTEXT_KEY, Deadline.after(300, { clock }))
    const wide = Deadline.after(900, { clock })
    const tight = Deadline.after(100, { clock })
    expect(runWithDeadline(wide, () => injected(ctx))['x-deadline-remaining-ms']).toBe('300')
    expect(runWithDeadline(tight, () => injected(ctx))['x-deadline-remaining-ms']).toBe('100')
  })

  it("sends the current deadline's time, not the extracted budget: the ingress applied its own maxMs and trust", () => {
    const sent = (inbound: Record<string, string>, current: Deadline) =>
      runWithDeadline(current, () => injected(propagation.extract(ROOT_CONTEXT, inbound)))[
        'x-deadline-remaining-ms'
      ]
    // deadline({ maxMs: 300_000 }) took the caller's 120 s; the propagator's own cap is 30 s.
    expect(sent({ 'x-deadline-remaining-ms': '120000' }, Deadline.after(119_990, { clock }))).toBe(
      '119990',
    )
    expect(sent({ 'grpc-timeout': '2M' }, Deadline.after(119_990, { clock }))).toBe('119990')
    // deadline({ trust: [] }) ignored the caller's header and gave the handler its default.
    expect(sent({ 'x-deadline-remaining-ms': '0' }, Deadline.after(4988, { clock }))).toBe('4988')
    expect(sent({ 'x-deadline-remaining-ms': '3' }, Deadline.after(4988, { clock }))).toBe('4988')
    // Without a current deadline the extracted budget is all there is.
    expect(
      injected(propagation.extract(ROOT_CONTEXT, { 'x-deadline-remaining-ms': '3' })),
    ).toMatchObject({
      'x-deadline-remaining-ms': '3',
    })
  })

  it("injects a Deadline stored in the Context by another installed copy of core (currentDeadline() may return one), not only this copy's", () => {
    const own = Deadline.after(300, { clock })
    // Another copy's Deadline: the same members on another prototype, so not `instanceof` this one.
    const foreign = Object.create({
      remaining: () => own.remaining(),
      elapsed: () => own.elapsed(),
      throwIfExpired: () => own.throwIfExpired(),
      onDone: (fn: (reason: unknown) => void) => own.onDone(fn),
      get done() {
        return own.done
      },
      get reason() {
        return own.reason
      },
      get observe() {
        return own.observe
      },
    })
    expect(foreign).not.toBeInstanceOf(Deadline)
    const ctx = ROOT_CONTEXT.setValue(DEADLINE_CONTEXT_KEY, foreign)
    expect(injected(ctx)['x-deadline-remaining-ms']).toBe('300')
    own.cancel(new ClientClosedError())
    expect(injected(ctx)['x-deadline-remaining-ms']).toBe('0')
  })

  it('writes nothing without a deadline, for a never() deadline, or for a passed observe-only one', () => {
    expect(injected()).not.toHaveProperty('x-deadline-remaining-ms')
    expect(runWithDeadline(Deadline.never({ clock }), () => injected())).not.toHaveProperty(
      'x-deadline-remaining-ms',
    )
    const dark = Deadline.after(50, { clock, observe: true })
    clock.advance(60)
    expect(runWithDeadline(dark, () => injected())).not.toHaveProperty('x-deadline-remaining-ms')
  })

  it('in dark mode, an extracted budget that ran out is not sent on as 0 (the next hop would refuse at once)', () => {
    const inbound = propagation.extract(ROOT_CONTEXT, { 'x-deadline-remaining-ms': '100' })
    // The ingress observes the same inbound budget (express `mode: 'observe'`).
    const dark = Deadline.after(100, { clock, observe: true })
    const header = (deadline: Deadline) =>
      runWithDeadline(deadline, () => injected(inbound))['x-deadline-remaining-ms']
    // The same budget, enforced.
    const enforced = Deadline.after(100, { clock })
    clock.advance(40)
    expect(header(dark)).toBe('60')
    clock.advance(110)
    expect(header(dark)).toBeUndefined()
    expect(runWithDeadline(dark, () => remainingIn(inbound))).toBeUndefined()
    // Enforcing, or with no Hourglass deadline at all, it is 0: the next hop refuses.
    expect(header(enforced)).toBe('0')
    expect(injected(inbound)['x-deadline-remaining-ms']).toBe('0')
    // The client leaving still says 0, in dark mode too.
    dark.cancel(new ClientClosedError())
    expect(header(dark)).toBe('0')
  })

  it('a deadline cancelled (the client left) tells the next hop there is no time: 0, as an expired one does', () => {
    const header = (deadline: Deadline, ctx = context.active()) =>
      runWithDeadline(deadline, () => injected(ctx))['x-deadline-remaining-ms']
    const cancelled = (deadline: Deadline) => {
      deadline.cancel(new ClientClosedError())
      return deadline
    }
    const expired = Deadline.after(100, { clock })
    clock.advance(100)
    expect(header(expired)).toBe('0')
    expect(header(cancelled(Deadline.after(1000, { clock })))).toBe('0')
    // Dark mode does not hide the client leaving, nor does having no expiry.
    expect(header(cancelled(Deadline.after(1000, { clock, observe: true })))).toBe('0')
    expect(header(cancelled(Deadline.never({ clock })))).toBe('0')
    const dark = Deadline.after(50, { clock, observe: true })
    clock.advance(60)
    expect(header(cancelled(dark))).toBe('0')
    // One stored in the Context counts too, beside a live current deadline.
    const stored = ROOT_CONTEXT.setValue(
      DEADLINE_CONTEXT_KEY,
      cancelled(Deadline.after(1000, { clock })),
    )
    expect(header(Deadline.after(1000, { clock }), stored)).toBe('0')
    expect(remainingIn(stored)).toBe(0)
  })

  it('leaves a carrier alone that already carries the header (a fresher writer got there first)', () => {
    const headers: Record<string, string> = { 'X-Deadline-Remaining-Ms': '42' }
    runWithDeadline(Deadline.after(1000, { clock }), () =>
      propagation.inject(context.active(), headers),
    )
    expect(headers).toEqual({ 'X-Deadline-Remaining-Ms': '42' })
  })

  it('leaves a Map carrier alone that holds the header in another letter case: no second spelling beside it', () => {
    const carrier = new Map<string, string>([['X-Deadline-Remaining-Ms', '42']])
    const setter: TextMapSetter<Map<string, string>> = {
      set: (map, key, value) => {
        map.set(key, value)
      },
    }
    runWithDeadline(Deadline.after(1000, { clock }), () =>
      new DeadlinePropagator({ clock }).inject(context.active(), carrier, setter),
    )
    expect([...carrier]).toEqual([['X-Deadline-Remaining-Ms', '42']])
    // Without the header, a Map gets it as every carrier does.
    const empty = new Map<string, string>()
    runWithDeadline(Deadline.after(1000, { clock }), () =>
      new DeadlinePropagator({ clock }).inject(context.active(), empty, setter),
    )
    expect([...empty]).toEqual([['x-deadline-remaining-ms', '1000']])
  })

  it('leaves a grpc-js Metadata alone that already carries the header: set() would replace the fresher value', () => {
    // What instrumentation-grpc injects into, with this setter: Metadata has
    // neither has() nor keys(), and its own fields are no header names.
    const metadata = new Metadata()
    metadata.set('x-deadline-remaining-ms', '42')
    const setter: TextMapSetter<Metadata> = { set: (m, key, value) => m.set(key, value) }
    runWithDeadline(Deadline.after(1000, { clock }), () =>
      new DeadlinePropagator({ clock }).inject(context.active(), metadata, setter),
    )
    expect(metadata.get('x-deadline-remaining-ms')).toEqual(['42'])
    const empty = new Metadata()
    runWithDeadline(Deadline.after(1000, { clock }), () =>
      new DeadlinePropagator({ clock }).inject(context.active(), empty, setter),
    )
    expect(empty.get('x-deadline-remaining-ms')).toEqual(['1000'])
  })

  it('declares its header in fields(), and the composite lists it next to traceparent', () => {
    expect(new DeadlinePropagator().fields()).toEqual(['x-deadline-remaining-ms'])
    expect(propagation.fields()).toEqual(
      expect.arrayContaining(['traceparent', 'x-deadline-remaining-ms']),
    )
  })

  it('carries trace and budget across a real HTTP hop through the propagation API alone', async () => {
    // The receiving side does what instrumentation-http does: extract from req.headers.
    const seen: Array<{ traceId: string | undefined; remaining: string | undefined }> = []
    const server = http.createServer((req, res) => {
      const ctx = propagation.extract(ROOT_CONTEXT, req.headers)
      clock.advance(30)
      seen.push({
        traceId: trace.getSpanContext(ctx)?.traceId,
        remaining: injected(ctx)['x-deadline-remaining-ms'],
      })
      res.end()
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    try {
      const { port } = server.address() as AddressInfo
      const span = otel.tracer.startSpan('caller')
      const headers = context.with(trace.setSpan(ROOT_CONTEXT, span), () =>
        runWithDeadline(Deadline.after(500, { clock }), () => {
          clock.advance(100)
          return injected()
        }),
      )
      span.end()
      const res = await fetch(`http://127.0.0.1:${port}/`, { headers })
      await res.arrayBuffer()
      expect(seen).toEqual([{ traceId: span.spanContext().traceId, remaining: '370' }])
    } finally {
      await new Promise((resolve) => server.close(resolve))
    }
  })
})
