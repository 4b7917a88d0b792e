import { Deadline, ManualClock, writeDeadline } from '@hourglass/core'
import { describe, expect, it } from 'vitest'

// writeDeadline went by the expiry alone: a deadline its owner had cancelled
// (the client left) still wrote what its expiry left, so a direct caller
// told the next hop to spend 999 ms on work nobody waits for, where fetch
// and the gRPC client refuse to send and the OpenTelemetry propagator
// writes 0. A deadline that ended with a reason now writes 0.

describe('writeDeadline under a deadline that has ended', () => {
  it('a cancelled deadline writes 0, whatever its expiry leaves', () => {
    const clock = new ManualClock()
    using deadline = Deadline.after(1000, { clock })
    clock.advance(1)
    deadline.cancel(new Error('client left'))
    const headers: Record<string, string> = {}
    expect(writeDeadline(headers, deadline)).toBe(0)
    expect(headers).toEqual({ 'x-deadline-remaining-ms': '0' })
  })

  it('so does a cancelled never() (no expiry of its own) and a cancelled observe-only one', () => {
    const never = Deadline.never()
    never.cancel()
    const set = new Map<string, string>()
    expect(writeDeadline({ set: (n: string, v: string) => set.set(n, v) }, never)).toBe(0)
    expect(set.get('x-deadline-remaining-ms')).toBe('0')

    const clock = new ManualClock()
    using observed = Deadline.after(1000, { clock, observe: true })
    observed.cancel()
    const headers: Record<string, string> = {}
    expect(writeDeadline(headers, observed)).toBe(0)
    expect(headers['x-deadline-remaining-ms']).toBe('0')
  })

  it('a child of a cancelled parent writes 0 too', () => {
    const clock = new ManualClock()
    using parent = Deadline.after(5000, { clock })
    using child = parent.child(2000)
    parent.cancel()
    const headers: Record<string, string> = {}
    expect(writeDeadline(headers, child)).toBe(0)
    expect(headers['x-deadline-remaining-ms']).toBe('0')
  })

  it('unchanged: a live deadline writes what is left, never() and a passed observe-only deadline write nothing', () => {
    const clock = new ManualClock()
    using live = Deadline.after(1000, { clock })
    clock.advance(250)
    const headers: Record<string, string> = {}
    expect(writeDeadline(headers, live)).toBe(750)
    expect(headers['x-deadline-remaining-ms']).toBe('750')

    expect(writeDeadline({}, Deadline.never())).toBeUndefined()

    using observed = Deadline.after(100, { clock, observe: true })
    clock.advance(200)
    const untouched: Record<string, string> = {}
    expect(writeDeadline(untouched, observed)).toBeUndefined()
    expect(untouched).toEqual({})
  })

  it('a deadline that expired while enforcing writes 0, as before', () => {
    const clock = new ManualClock()
    using deadline = Deadline.after(100, { clock })
    clock.advance(100)
    const headers: Record<string, string> = {}
    expect(writeDeadline(headers, deadline)).toBe(0)
  })
})

it('headers that are no object are a TypeError naming the value, not a read of null', () => {
  const deadline = Deadline.after(100, { clock: new ManualClock() })
  expect(() => writeDeadline(null as never, deadline)).toThrow(
    new TypeError(
      'writeDeadline: headers must be an object (Headers, a response or a record), got null',
    ),
  )
})
