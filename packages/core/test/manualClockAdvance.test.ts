import { Deadline, ManualClock } from '@hourglass/core'
import { expect, it } from 'vitest'

// ManualClock stands in for a monotonic clock. advance(-5) moved it
// backwards (a deadline's remaining() grew), and advance(NaN) left it
// reading NaN for good: every deadline made on it afterwards never expired.

it('refuses a negative, NaN or infinite step with a RangeError and keeps its time', () => {
  const clock = new ManualClock(100)
  for (const step of [-5, Number.NaN, Number.POSITIVE_INFINITY]) {
    expect(() => clock.advance(step)).toThrow(RangeError)
  }
  expect(clock.now()).toBe(100)
  const deadline = Deadline.after(10, { clock })
  clock.advance(10)
  expect(deadline.expired).toBe(true)
})

// Each step finite, their sum not: a helper that advances "to the end of
// time" (Number.MAX_VALUE) twice left the clock reading Infinity for good.
// A deadline made on it then was born expired with elapsed() NaN, and a
// wait(100) on it never settled (its end, Infinity − Infinity, is NaN).
it('refuses a finite step that would take the time past every finite number, and keeps its time', () => {
  const clock = new ManualClock()
  clock.advance(Number.MAX_VALUE)
  expect(() => clock.advance(Number.MAX_VALUE)).toThrow(RangeError)
  expect(clock.now()).toBe(Number.MAX_VALUE)
  expect(() => new ManualClock(Number.MAX_VALUE).advance(Number.MAX_VALUE)).toThrow(RangeError)
  // (Time that far has no room for 10 ms more: what matters is it is a time.)
  expect(Deadline.after(10, { clock }).elapsed()).toBe(0)
})

// A timer's callback that advances the clock further (a helper driving time
// from inside a callback) ran past the outer step's target, and the outer
// advance then set the time back to its own target: a deadline made after it
// expired later than its budget, time read by the callback's work went back.
it('never moves back when a timer callback advances past the outer step', () => {
  const clock = new ManualClock()
  const seen: number[] = []
  clock.setTimeout(() => {
    clock.advance(100)
    seen.push(clock.now())
  }, 5)
  clock.advance(10)
  expect(seen).toEqual([105])
  expect(clock.now()).toBe(105)
  const deadline = Deadline.after(50, { clock })
  expect(deadline.startedAt).toBe(105)
  clock.advance(50)
  expect(deadline.expired).toBe(true)
})

// Node fires setTimeout(fn, NaN) after 1 ms, and systemClock cuts Infinity to
// 2^31-1 ms; ManualClock kept both at `now + NaN` / `now + Infinity`, never
// due: what such a timer guarded hung in the test and ran in production.
it('fires a timer given NaN, undefined or a negative delay at once, and Infinity at 2^31-1 ms', () => {
  const clock = new ManualClock()
  const fired: string[] = []
  clock.setTimeout(() => fired.push('NaN'), Number.NaN)
  clock.setTimeout(() => fired.push('undefined'), undefined as unknown as number)
  clock.setTimeout(() => fired.push('negative'), -5)
  clock.setTimeout(() => fired.push('Infinity'), Number.POSITIVE_INFINITY)
  clock.advance(1)
  expect(fired).toEqual(['NaN', 'undefined', 'negative'])
  clock.advance(2 ** 31 - 2)
  expect(fired).toEqual(['NaN', 'undefined', 'negative', 'Infinity'])
  expect(clock.pendingTimers).toBe(0)
})

it('refuses a callback that is no function, and a start that is no finite number, when given', () => {
  const clock = new ManualClock()
  expect(() => clock.setTimeout('tick' as unknown as () => void, 5)).toThrow(
    new TypeError(`ManualClock.setTimeout expects a function, got 'tick' (a string)`),
  )
  expect(clock.pendingTimers).toBe(0)
  clock.advance(10) // threw "callback is not a function" here
  expect(() => new ManualClock(Number.NaN)).toThrow(
    new RangeError('new ManualClock: startMs must be a finite number of ms, got NaN'),
  )
  expect(() => new ManualClock(Number.POSITIVE_INFINITY)).toThrow(RangeError)
  // A wrong type is a TypeError, as the README says and every option check does.
  expect(() => new ManualClock('5' as unknown as number)).toThrow(TypeError)
  expect(() => new ManualClock('5' as unknown as number)).toThrow(
    new TypeError("new ManualClock: startMs must be a finite number of ms, got '5' (a string)"),
  )
})

// A callback that re-arms itself with no delay (a poller, a pacing delay
// computed as 0) is due again at the very time it ran: `advance` fired it for
// ever, synchronously, and the test worker hung past every test timeout
// (Node waits 1 ms for each, so in production it merely polls). It now gives
// up with a RangeError once a chain of such timers, each set by the one
// before, passes 10,000 with time standing still; a finite chain of them
// still runs in the step.
it('refuses to spin for ever on a timer that re-arms itself with no delay, and still runs a finite chain of them', () => {
  const clock = new ManualClock()
  let polls = 0
  const poll = () => {
    polls++
    clock.setTimeout(poll, 0)
  }
  clock.setTimeout(poll, 5)
  expect(() => clock.advance(100)).toThrow(
    /ManualClock\.advance: a chain of 10000 timers, each set with no delay by the one before, fired at 5 ms without time moving/,
  )
  expect(polls).toBe(10_001)
  expect(clock.now()).toBe(5)
  expect(clock.pendingTimers).toBe(1)

  // A chain that ends: fired in the same step, each at the time it was set.
  const other = new ManualClock()
  const seen: number[] = []
  let left = 3
  const step = () => {
    seen.push(other.now())
    if (--left > 0) other.setTimeout(step, 0)
  }
  other.setTimeout(step, 5)
  other.advance(10)
  expect(seen).toEqual([5, 5, 5])
  expect(other.now()).toBe(10)
  expect(other.pendingTimers).toBe(0)
})

// The limit is on one chain — a timer set with no delay by a callback of one
// set so, and so on — not on every such timer fired while time stands still:
// counted all together, a batch that each hand their work on with no delay
// (10,001 deadlines due at once, each onDone setting a timer of 0; one
// callback setting 10,001 of them) threw the RangeError, where before the
// limit they all ran. Each of those is a chain of one.
it('runs 10,001 timers set with no delay by one callback in one step', () => {
  const clock = new ManualClock()
  let fired = 0
  clock.setTimeout(() => {
    for (let i = 0; i < 10_001; i++) clock.setTimeout(() => fired++, 0)
  }, 5)
  clock.advance(10)
  expect(fired).toBe(10_001)
  expect(clock.now()).toBe(10)
  expect(clock.pendingTimers).toBe(0)
})

it('runs 10,001 deadlines’ onDone that each set a timer with no delay in one step', () => {
  const other = new ManualClock()
  let handedOn = 0
  const deadlines = Array.from({ length: 10_001 }, () => {
    const deadline = Deadline.after(5, { clock: other })
    deadline.onDone(() => other.setTimeout(() => handedOn++, 0))
    return deadline
  })
  other.advance(10)
  expect(handedOn).toBe(10_001)
  expect(deadlines.every((d) => d.expired)).toBe(true)
  expect(other.now()).toBe(10)
  expect(other.pendingTimers).toBe(0)
})

// `advance` rethrows the first error a callback threw in the step; the
// RangeError of a timer spinning with no delay took its place and the error
// was lost, though it is often why the poller never stops (its `ready()`
// threw before it could). It is the RangeError's `cause`.
it('gives up on a spinning timer with the error a callback threw earlier in the step as the RangeError’s cause', () => {
  const clock = new ManualClock()
  const broken = new Error('ready() failed')
  clock.setTimeout(() => {
    throw broken
  }, 1)
  const poll = () => {
    clock.setTimeout(poll, 0)
  }
  clock.setTimeout(poll, 5)
  let thrown: unknown
  try {
    clock.advance(100)
  } catch (error) {
    thrown = error
  }
  expect(thrown).toBeInstanceOf(RangeError)
  expect((thrown as RangeError).cause).toBe(broken)

  // No callback threw: no cause.
  const other = new ManualClock()
  const spin = () => {
    other.setTimeout(spin, 0)
  }
  other.setTimeout(spin, 5)
  let plain: unknown
  try {
    other.advance(100)
  } catch (error) {
    plain = error
  }
  expect(plain).toBeInstanceOf(RangeError)
  expect(Object.hasOwn(plain as RangeError, 'cause')).toBe(false)
})

// The clock keeps its timers in a heap: a scan of them all per timer made
// 60,000 due in one step (the deadlines of a load test driven by the clock)
// take 12–16 s, synchronously, past any test timeout; ~50 ms now (measured
// by hand: speed is the bench's to assert, not a test's). The order stays:
// by due time, then by creation, timers set or cleared by a callback included.
it('fires by due time then creation, with timers set and cleared by callbacks during the step', () => {
  const clock = new ManualClock()
  const fired: string[] = []
  const later = clock.setTimeout(() => fired.push('cleared by a'), 20)
  clock.setTimeout(() => {
    fired.push('a@10')
    clock.clearTimeout(later)
    clock.setTimeout(() => fired.push('set by a, due 15'), 5)
    clock.setTimeout(() => fired.push('set by a, due 10'), 0)
  }, 10)
  clock.setTimeout(() => fired.push('b@10'), 10)
  clock.setTimeout(() => fired.push('c@15'), 15)
  // Made and cleared by the thousand: none is kept, none fires.
  for (let i = 0; i < 5000; i++) clock.clearTimeout(clock.setTimeout(() => fired.push('x'), 12))
  expect(clock.pendingTimers).toBe(4)
  clock.advance(30)
  expect(fired).toEqual(['a@10', 'b@10', 'set by a, due 10', 'c@15', 'set by a, due 15'])
  expect(clock.pendingTimers).toBe(0)
})

it('60,000 due in one advance fire in order of due time then creation, cleared ones not at all', () => {
  const clock = new ManualClock()
  const order: number[] = []
  const handles = Array.from({ length: 60_000 }, (_, i) =>
    clock.setTimeout(() => order.push(i), 100 + (i % 50)),
  )
  // A tenth of them cleared before their time.
  for (let i = 0; i < handles.length; i += 10) clock.clearTimeout(handles[i])
  clock.advance(200)
  const expected = handles
    .map((_, i) => i)
    .filter((i) => i % 10 !== 0)
    .sort((a, b) => (a % 50) - (b % 50) || a - b)
  expect(order).toEqual(expected)
  expect(clock.pendingTimers).toBe(0)
})
