import { ManualClock } from '@hourglass/core'
import { DeadlinePropagator } from '@hourglass/otel'
import { ROOT_CONTEXT } from '@opentelemetry/api'
import { describe, expect, it } from 'vitest'

/**
 * A bad option is refused when the propagator is made. Read at extract time,
 * a negative maxMs cut every inbound budget to 0 ms (every request after it a
 * 504), and a bad `sources` or `clock` threw from every extract — which
 * OpenTelemetry's CompositePropagator swallows, so no deadline went on.
 */
describe('DeadlinePropagator options', () => {
  it.each([
    [-1, RangeError],
    [Number.NaN, RangeError],
    [null, TypeError],
    ['5000', TypeError],
  ])('refuses maxMs %s, naming it', (maxMs, type) => {
    expect(() => new DeadlinePropagator({ maxMs: maxMs as number })).toThrow(type)
    expect(() => new DeadlinePropagator({ maxMs: maxMs as number })).toThrow(/maxMs must be/)
  })

  it.each([
    ['a string', 'x-deadline-remaining-ms'],
    ['an object', {}],
  ])('refuses sources that are %s, naming it', (_, sources) => {
    expect(() => new DeadlinePropagator({ sources: sources as never })).toThrow(
      /sources must be an array/,
    )
  })

  it('refuses an unknown name in sources, naming it; a known one in any case is taken (header names are)', () => {
    expect(() => new DeadlinePropagator({ sources: ['x-request-timeout' as never] })).toThrow(
      /sources lists an unknown header "x-request-timeout"/,
    )
    const getter = { get: (c: Record<string, string>, k: string) => c[k], keys: Object.keys }
    const p = new DeadlinePropagator({ sources: ['X-Deadline-Remaining-Ms' as never] })
    expect(p.extract(ROOT_CONTEXT, { 'x-deadline-remaining-ms': '800' }, getter)).not.toBe(
      ROOT_CONTEXT,
    )
  })

  it.each([{}, 5, null])('refuses clock %s, naming it', (clock) => {
    expect(() => new DeadlinePropagator({ clock: clock as never })).toThrow(/clock must be a Clock/)
  })

  it('still takes good options: Infinity (no cap), [] (extract nothing), a ManualClock', () => {
    const getter = { get: (c: Record<string, string>, k: string) => c[k], keys: Object.keys }
    const carrier = { 'x-deadline-remaining-ms': '800' }
    const p = new DeadlinePropagator({ maxMs: Infinity, clock: new ManualClock() })
    expect(p.extract(ROOT_CONTEXT, carrier, getter)).not.toBe(ROOT_CONTEXT)
    const none = new DeadlinePropagator({ sources: [] })
    expect(none.extract(ROOT_CONTEXT, carrier, getter)).toBe(ROOT_CONTEXT)
  })
})
