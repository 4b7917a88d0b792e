import { getEventListeners, getMaxListeners } from 'node:events'
import { Deadline, ManualClock } from '@hourglass/core'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

/**
 * One shutdown signal given to every request's deadline (`{ signal }`): a
 * listener per deadline warned "Possible EventTarget memory leak detected.
 * 11 abort listeners" at 11 requests in flight.
 */
describe('many live deadlines following one external signal', () => {
  const warnings: Error[] = []
  const onWarning = (warning: Error) => warnings.push(warning)
  beforeEach(() => {
    warnings.length = 0
    process.on('warning', onWarning)
  })
  afterEach(() => {
    process.off('warning', onWarning)
  })

  /** Lets process.emitWarning's 'warning' event (emitted on the next tick) arrive. */
  const warningsEmitted = () => new Promise<void>((resolve) => setImmediate(resolve))

  it('50 on one signal: no warning, the signal keeps its limit, its abort ends all 50 with its reason, no listener left', async () => {
    const clock = new ManualClock()
    const shutdown = new AbortController()
    // Node's own default for a signal: 10 on Node 20, 0 (no limit) on Node 24.
    const limit = getMaxListeners(shutdown.signal)
    const deadlines = Array.from({ length: 50 }, () =>
      Deadline.after(5000, { clock, signal: shutdown.signal }),
    )
    await warningsEmitted()
    expect(warnings.map((w) => w.name)).toEqual([])
    expect(getEventListeners(shutdown.signal, 'abort').length).toBeLessThan(2)
    expect(getMaxListeners(shutdown.signal)).toBe(limit)

    const reason = new Error('shutting down')
    shutdown.abort(reason)
    expect(deadlines.every((d) => d.done && d.reason === reason)).toBe(true)
    expect(deadlines.every((d) => d.signal.aborted && d.signal.reason === reason)).toBe(true)
    expect(getEventListeners(shutdown.signal, 'abort')).toHaveLength(0)
    expect(clock.pendingTimers).toBe(0)
    await warningsEmitted()
    expect(warnings).toEqual([])
  })

  it('the listener stays while any deadline on the signal is live, and goes with the last (expired or disposed)', () => {
    const clock = new ManualClock()
    const shutdown = new AbortController()
    const short = Array.from({ length: 20 }, () =>
      Deadline.after(10, { clock, signal: shutdown.signal }),
    )
    const long = Array.from({ length: 20 }, () =>
      Deadline.after(100, { clock, signal: shutdown.signal }),
    )
    clock.advance(10)
    expect(short.every((d) => d.expired && d.done)).toBe(true)
    expect(getEventListeners(shutdown.signal, 'abort')).toHaveLength(1)
    for (const d of long.slice(1)) d.dispose()
    expect(getEventListeners(shutdown.signal, 'abort')).toHaveLength(1)
    long[0]!.dispose()
    expect(getEventListeners(shutdown.signal, 'abort')).toHaveLength(0)

    // A deadline made after that follows the signal again, on its own.
    const later = Deadline.after(100, { clock, signal: shutdown.signal })
    expect(getEventListeners(shutdown.signal, 'abort')).toHaveLength(1)
    shutdown.abort('bye')
    expect(later.reason).toBe('bye')
    expect(long.every((d) => !d.done)).toBe(true) // disposed before: not followed any more
    expect(getEventListeners(shutdown.signal, 'abort')).toHaveLength(0)
  })

  it("a deadline disposed by another's onCancel during the abort is not cancelled, as a removed listener was not called", () => {
    const clock = new ManualClock()
    const shutdown = new AbortController()
    let second: Deadline | undefined
    const first = Deadline.after(100, {
      clock,
      signal: shutdown.signal,
      onCancel: () => second?.dispose(),
    })
    second = Deadline.after(100, { clock, signal: shutdown.signal })
    const third = Deadline.after(100, { clock, signal: shutdown.signal })
    shutdown.abort('bye')
    expect([first.reason, second.done, third.reason]).toEqual(['bye', false, 'bye'])
    expect(getEventListeners(shutdown.signal, 'abort')).toHaveLength(0)
  })
})
