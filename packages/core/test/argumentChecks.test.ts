import { describe, expect, it } from 'vitest'
import {
  boundingDeadline,
  Deadline,
  enforcedRemaining,
  guard,
  ManualClock,
  runWithDeadline,
} from '../src/index.js'

// Arguments of the wrong type are refused at the call, naming the argument
// and the value, not found later with a message about something else.

describe('guard: a slice that is no string', () => {
  it('rejects at once with a TypeError naming the slice, before the work starts', async () => {
    const clock = new ManualClock()
    using deadline = Deadline.after(100, { clock })
    let started = false
    const work = () => {
      started = true
      return new Promise<never>(() => {})
    }
    // A Symbol was found only at expiry: "Cannot convert a Symbol value to
    // a string", a TypeError in place of the DeadlineExceededError.
    await expect(guard(work, { deadline, slice: Symbol('parse') as never })).rejects.toThrow(
      new TypeError('guard: slice must be a string, got Symbol(parse)'),
    )
    // A number or an object was the slice "5" or "[object Object]".
    await expect(guard(work, { deadline, slice: 5 as never })).rejects.toThrow(
      'guard: slice must be a string, got 5',
    )
    await expect(guard(work, { slice: {} as never })).rejects.toThrow(
      'guard: slice must be a string, got an object',
    )
    // The name where the options belong read as no options at all.
    await expect(guard(work, 'parse' as never)).rejects.toThrow(
      "guard: options must be an object ({ deadline?, slice? }), got 'parse' (a string)",
    )
    expect(started).toBe(false)
    expect(clock.pendingTimers).toBe(1) // the deadline's own: guard armed nothing
  })

  it('work already started is cancelled and its later failure handled: refused options do not leave it to crash the process', async () => {
    for (const options of [{ slice: 5 }, 'dns', { deadline: 5 }]) {
      let cancelled = 0
      let fail!: (error: Error) => void
      const work = Object.assign(
        new Promise<never>((_, reject) => {
          fail = reject
        }),
        { cancel: () => void cancelled++ },
      )
      await expect(guard(work, options as never)).rejects.toThrow(TypeError)
      expect(cancelled, JSON.stringify(options)).toBe(1)
      // Unhandled, this rejection ended the process (vitest fails the run).
      fail(new Error('upstream failed'))
    }
    await new Promise((resolve) => setImmediate(resolve))
  })

  it('a string slice, or none, is named as before', async () => {
    const clock = new ManualClock()
    using deadline = Deadline.after(100, { clock, name: 'request' })
    const named = guard(new Promise(() => {}), { deadline, slice: 'parse' })
    const unnamed = guard(new Promise(() => {}), { deadline, slice: null as never })
    clock.advance(100)
    await expect(named).rejects.toMatchObject({ code: 'DEADLINE_EXCEEDED', slice: 'parse' })
    await expect(unnamed).rejects.toMatchObject({ code: 'DEADLINE_EXCEEDED', slice: 'request' })
  })
})

describe('boundingDeadline: a value that is no deadline', () => {
  it('throws a TypeError naming it; undefined and null are none', () => {
    using deadline = Deadline.after(100, { clock: new ManualClock() })
    // A number of ms was returned as its own bound: boundingDeadline(5) read 5.
    expect(() => boundingDeadline(5 as never)).toThrow(
      new TypeError('boundingDeadline: deadline must be a Deadline, got 5'),
    )
    expect(() => boundingDeadline({} as never)).toThrow(
      'boundingDeadline: deadline must be a Deadline, got an object',
    )
    // '1' compared false with every figure: no observe-only deadline counted.
    expect(() => boundingDeadline(deadline, '1' as never)).toThrow(
      "boundingDeadline: observedMs must be a number, got '1' (a string)",
    )
    // Read off what boundingDeadline returned: "….remaining is not a function".
    expect(() => enforcedRemaining(5 as never)).toThrow(
      new TypeError('enforcedRemaining: deadline must be a Deadline, got 5'),
    )
    expect(boundingDeadline(undefined)).toBeUndefined()
    expect(boundingDeadline(null)).toBeUndefined()
    expect(boundingDeadline(deadline, 1)).toBe(deadline)
  })
})

describe('runWithDeadline: a function that is no function', () => {
  it('throws a TypeError naming it, not AsyncLocalStorage’s "Function.prototype.apply was called on 5"', () => {
    using deadline = Deadline.after(100, { clock: new ManualClock() })
    expect(() => runWithDeadline(deadline, 5 as never)).toThrow(
      new TypeError('runWithDeadline: fn must be a function, got 5'),
    )
    expect(() => runWithDeadline(undefined, 'run' as never)).toThrow(
      "runWithDeadline: fn must be a function, got 'run' (a string)",
    )
    expect(runWithDeadline(deadline, () => 'ran')).toBe('ran')
  })
})

describe('plan.run: a step that is no function', () => {
  it('rejects with a TypeError naming it and leaves the slice unstarted', async () => {
    const clock = new ManualClock()
    using deadline = Deadline.after(1000, { clock })
    const plan = deadline.plan({ model: 1 }, { reserveMs: 0 })
    // A promise where `() => promise` belongs: the slice was started,
    // reported `failed`, and the rejection read "step is not a function".
    await expect(plan.run('model', Promise.resolve('answer') as never)).rejects.toThrow(
      new TypeError('plan.run: step must be a function, got an object'),
    )
    await expect(plan.run('model', undefined as never)).rejects.toThrow(
      'plan.run: step must be a function, got undefined',
    )
    // A promise that fails later: handled, not left to end the process.
    let fail!: (error: Error) => void
    const failing = new Promise<never>((_, reject) => {
      fail = reject
    })
    await expect(plan.run('model', failing as never)).rejects.toThrow(TypeError)
    fail(new Error('upstream failed'))
    await new Promise((resolve) => setImmediate(resolve))
    expect(plan.report()).toEqual([
      { name: 'model', allottedMs: 0, usedMs: 0, outcome: 'not-started' },
    ])
    // The slice is still there to run.
    await expect(plan.run('model', () => 'answer')).resolves.toBe('answer')
    expect(plan.report()[0]).toMatchObject({ allottedMs: 1000, outcome: 'ok' })
  })
})
