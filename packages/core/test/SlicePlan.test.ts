import diagnostics from 'node:diagnostics_channel'
import {
  coreChannels,
  currentDeadline,
  Deadline,
  hasErrorCode,
  isHourglassError,
  ManualClock,
  runningSlice,
  SliceAlreadyStartedError,
  SliceNotStartedError,
  UnknownSliceError,
} from '@hourglass/core'
import fc from 'fast-check'
import { describe, expect, it, vi } from 'vitest'

const shares = { dns: 0.05, preprocess: 0.15, model: 0.7, write: 0.1 }

describe('deadline.plan', () => {
  it('allots each slice its share of what is left, minus the reserve', () => {
    const c = new ManualClock()
    const plan = Deadline.after(1010, { clock: c }).plan(shares, { reserveMs: 10 })
    expect(plan.allotment('dns')).toBeCloseTo(50, 9)
    expect(plan.slice('dns').budgetMs).toBeCloseTo(50, 9)
  })

  it('lets time a fast slice leaves over flow to the later ones', () => {
    const c = new ManualClock()
    const plan = Deadline.after(1010, { clock: c }).plan(shares, { reserveMs: 10 })
    plan.slice('dns')
    c.advance(10) // dns used 10 of its 50
    plan.end('dns')
    // 990 left after reserve is split over preprocess:model:write = 0.15:0.7:0.1
    expect(plan.slice('preprocess').budgetMs).toBeCloseTo((990 * 0.15) / 0.95, 6)
  })

  it('keeps fixed slices apart from the shares and never grants more than remains', () => {
    const c = new ManualClock()
    const plan = Deadline.after(1000, { clock: c }).plan(
      { dns: { ms: 200 }, model: 1, write: { ms: 100 } },
      { reserveMs: 0 },
    )
    expect(plan.allotment('model')).toBe(700)
    expect(plan.slice('dns').budgetMs).toBe(200)
    c.advance(950)
    expect(plan.slice('write').budgetMs).toBe(50)
  })

  it('rejects bad entries and unknown or repeated slices with clear messages', () => {
    const d = Deadline.after(100, { clock: new ManualClock() })
    expect(() => d.plan({ a: -1 })).toThrow(/slice "a" must be a positive share/)
    expect(() => d.plan({ a: { ms: Number.NaN } })).toThrow(RangeError)
    expect(() => d.plan({ a: 1 }, { reserveMs: -1 })).toThrow(/reserveMs/)
    const plan = d.plan({ a: 1 })
    expect(() => plan.slice('b')).toThrow(/no slice named "b"/)
    plan.slice('a')
    expect(() => plan.slice('a')).toThrow(/already started/)
  })

  it('run rejects when its slice runs out, naming the slice, even if the step ignores its signal', async () => {
    const c = new ManualClock()
    const plan = Deadline.after(110, { clock: c }).plan(
      { preprocess: 1, model: 1 },
      { reserveMs: 10 },
    )
    const running = plan.run('preprocess', () => new Promise(() => {}))
    await Promise.resolve()
    c.advance(50)
    await expect(running).rejects.toMatchObject({
      code: 'DEADLINE_EXCEEDED',
      slice: 'preprocess',
      budgetMs: 50,
    })
    expect(plan.report()[0]).toMatchObject({
      name: 'preprocess',
      allottedMs: 50,
      usedMs: 50,
      outcome: 'exceeded',
    })
  })

  it('run names the slice when the whole deadline runs out during it', async () => {
    const c = new ManualClock()
    const parent = Deadline.after(100, { clock: c })
    const plan = parent.plan({ model: { ms: 100 } }, { reserveMs: 0 })
    const running = plan.run(
      'model',
      (signal) =>
        new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason))),
    )
    c.advance(100)
    await expect(running).rejects.toMatchObject({ code: 'DEADLINE_EXCEEDED', slice: 'model' })
  })

  it('run makes the slice the current deadline and reports every slice in plan order', async () => {
    const c = new ManualClock()
    const plan = Deadline.after(1010, { clock: c }).plan(shares, { reserveMs: 10 })
    const inside = await plan.run('dns', () => {
      c.advance(5)
      return currentDeadline()?.name
    })
    expect(inside).toBe('dns')
    await expect(
      plan.run('preprocess', () => Promise.reject(new Error('bad input'))),
    ).rejects.toThrow('bad input')
    expect(plan.report()).toEqual([
      { name: 'dns', allottedMs: 50, usedMs: 5, outcome: 'ok' },
      { name: 'preprocess', allottedMs: expect.any(Number), usedMs: 0, outcome: 'failed' },
      { name: 'model', allottedMs: 0, usedMs: 0, outcome: 'not-started' },
      { name: 'write', allottedMs: 0, usedMs: 0, outcome: 'not-started' },
    ])
    expect(c.pendingTimers).toBe(1) // only the parent's
  })

  it('reports a slice ended by an abort as cancelled, whether the abort says so by name or by Node’s ABORT_ERR code', async () => {
    const c = new ManualClock()
    const plan = Deadline.after(1000, { clock: c }).plan({ a: 1, b: 1, c: 1 }, { reserveMs: 0 })
    const byName = new DOMException('This operation was aborted', 'AbortError')
    const byCode = Object.assign(new Error('stream aborted'), { code: 'ABORT_ERR' })
    await expect(plan.run('a', () => Promise.reject(byName))).rejects.toBe(byName)
    await expect(plan.run('b', () => Promise.reject(byCode))).rejects.toBe(byCode)
    await expect(plan.run('c', () => Promise.reject(new Error('bad')))).rejects.toThrow('bad')
    expect(plan.report().map((row) => row.outcome)).toEqual(['cancelled', 'cancelled', 'failed'])
  })

  it('publishes slice start and end events', async () => {
    const events: Array<[string, unknown]> = []
    const onStart = (m: unknown) => events.push(['start', m])
    const onEnd = (m: unknown) => events.push(['end', m])
    diagnostics.subscribe(coreChannels.sliceStart.name, onStart)
    diagnostics.subscribe(coreChannels.sliceEnd.name, onEnd)
    try {
      const c = new ManualClock()
      const plan = Deadline.after(100, { clock: c }).plan({ a: 1 }, { reserveMs: 0 })
      await plan.run('a', () => c.advance(7))
      expect(events).toMatchObject([
        ['start', { slice: 'a', allottedMs: 100 }],
        ['end', { slice: 'a', allottedMs: 100, usedMs: 7, outcome: 'ok' }],
      ])
    } finally {
      diagnostics.unsubscribe(coreChannels.sliceStart.name, onStart)
      diagnostics.unsubscribe(coreChannels.sliceEnd.name, onEnd)
    }
  })

  it('property: slices never exceed the parent, shares re-normalise, and the sum stays within budget', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 100_000 }),
        fc.integer({ min: 0, max: 500 }),
        fc.array(
          fc.tuple(
            fc.double({ min: 0.001, max: 100, noNaN: true }),
            fc.double({ min: 0, max: 1, noNaN: true }),
          ),
          { minLength: 1, maxLength: 8 },
        ),
        (budget, reserveMs, steps) => {
          const c = new ManualClock()
          const parent = Deadline.after(budget, { clock: c })
          const entries = Object.fromEntries(steps.map(([share], i) => [`s${i}`, share]))
          const plan = parent.plan(entries, { reserveMs })
          let sum = 0
          const totalShares = steps.reduce((a, [s]) => a + s, 0)
          let sharesLeft = totalShares
          for (const [i, [share, usedFraction]] of steps.entries()) {
            const before = Math.max(0, parent.remaining() - reserveMs)
            const slice = plan.slice(`s${i}`)
            // re-normalised over the slices not yet started
            expect(slice.budgetMs).toBeCloseTo((before * share) / sharesLeft, 3)
            expect(slice.expiresAt).toBeLessThanOrEqual(parent.expiresAt)
            sharesLeft -= share
            const used = slice.budgetMs * usedFraction
            c.advance(used)
            sum += used
            plan.end(`s${i}`)
          }
          expect(sum).toBeLessThanOrEqual(Math.max(0, budget - reserveMs) + 1e-6)
        },
      ),
      { numRuns: 500 },
    )
  })
})

describe('a slice that is over before its step starts', () => {
  it('run does not start the step when nothing is left to allot', async () => {
    const c = new ManualClock()
    const plan = Deadline.after(5, { clock: c }).plan({ model: 1 }, { reserveMs: 10 })
    const step = vi.fn()
    await expect(plan.run('model', step)).rejects.toMatchObject({
      code: 'DEADLINE_EXCEEDED',
      slice: 'model',
    })
    await new Promise((resolve) => setImmediate(resolve))
    expect(step).not.toHaveBeenCalled()
    expect(plan.report()[0]?.outcome).toBe('exceeded')
  })

  it('run does not start the step of a request already cancelled', async () => {
    const c = new ManualClock()
    const d = Deadline.after(1000, { clock: c })
    const plan = d.plan({ model: 1 })
    const reason = new Error('the client left')
    d.cancel(reason)
    const step = vi.fn()
    await expect(plan.run('model', step)).rejects.toBe(reason)
    await new Promise((resolve) => setImmediate(resolve))
    expect(step).not.toHaveBeenCalled()
  })
})

describe('misuse of a plan', () => {
  it('refuses an unknown, repeated or unstarted slice with a stable code, in run too', async () => {
    const d = Deadline.after(100, { clock: new ManualClock() })
    const plan = d.plan({ model: 1, write: { ms: 5 } })
    const step = vi.fn(() => 'answer')
    const typo = await plan.run('modle', step).catch((e: unknown) => e)
    expect(typo).toMatchObject({
      code: 'UNKNOWN_SLICE',
      slice: 'modle',
      known: ['model', 'write'],
      message: 'no slice named "modle" in this plan (model, write)',
    })
    expect(typo).toBeInstanceOf(UnknownSliceError)
    expect(hasErrorCode(typo, 'UNKNOWN_SLICE')).toBe(true)
    expect(step).not.toHaveBeenCalled()
    expect(() => plan.allotment('nope')).toThrow(expect.objectContaining({ code: 'UNKNOWN_SLICE' }))
    expect(() => plan.end('write')).toThrow(expect.objectContaining({ code: 'SLICE_NOT_STARTED' }))
    await plan.run('model', step)
    const again = await plan.run('model', step).catch((e: unknown) => e)
    expect(again).toBeInstanceOf(SliceAlreadyStartedError)
    expect(again).toMatchObject({ code: 'SLICE_ALREADY_STARTED', slice: 'model' })
    expect(() => plan.slice('model')).toThrow(SliceAlreadyStartedError)
    expect(step).toHaveBeenCalledTimes(1)
    expect(isHourglassError(new SliceNotStartedError('x'))).toBe(true)
  })

  it('names the bad value when the entries are not a record of shares', () => {
    const d = Deadline.after(100, { clock: new ManualClock() })
    const plan = (entries: unknown) => () => d.plan(entries as Record<string, number>)
    expect(plan(null)).toThrow(
      new TypeError('plan: entries must be an object of { name: share or { ms } }, got null'),
    )
    expect(plan(undefined)).toThrow(/plan: entries must be an object .*, got undefined/)
    expect(plan('ab')).toThrow(/got 'ab' \(a string\)/)
    expect(plan([0.5, 0.5])).toThrow(/got an array/)
    // JSON.stringify threw "Do not know how to serialize a BigInt".
    expect(plan({ a: 1n })).toThrow(
      new TypeError('slice "a" must be a positive share or { ms: ≥ 0 }, got 1n (a BigInt)'),
    )
    expect(plan({ a: { ms: '5' } })).toThrow(
      new TypeError(
        `slice "a" must be a positive share or { ms: ≥ 0 }, got { ms: '5' (a string) }`,
      ),
    )
    expect(plan({ a: { ms: -5 } })).toThrow(RangeError)
    // null options read as none.
    expect(d.plan({ a: 1 }, null as unknown as undefined).reserveMs).toBe(10)
    expect(() => d.plan({ a: 1 }, 'fast' as never)).toThrow(/plan: options must be an object/)
  })
})

describe('runningSlice', () => {
  it('names the running slice of the last plan made on a deadline, and nothing for anything else', () => {
    const d = Deadline.after(1000, { clock: new ManualClock() })
    expect(runningSlice(d)).toBeUndefined()
    const first = d.plan({ fetch: 1, model: 1 })
    first.slice('fetch')
    expect(runningSlice(d)).toBe('fetch')
    first.end('fetch')
    expect(runningSlice(d)).toBeUndefined()
    // A later plan replaces it: a deadline making a plan per job keeps one.
    d.plan({ score: 1 }).slice('score')
    expect(runningSlice(d)).toBe('score')
    expect(runningSlice({} as Deadline)).toBeUndefined()
    expect(runningSlice(null as unknown as Deadline)).toBeUndefined()
    d.dispose()
  })
})
