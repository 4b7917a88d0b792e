import { execFile } from 'node:child_process'
import { getEventListeners } from 'node:events'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { Deadline, ManualClock, wait } from '@hourglass/core'
import { describe, expect, it } from 'vitest'

const run = promisify(execFile)

describe('wait: the one cancellable wait', () => {
  it('resolves "timer" when its time is up on the given clock, leaving no timer', async () => {
    const clock = new ManualClock()
    let result: string | undefined
    const pending = wait(500, { clock }).then((r) => {
      result = r
    })
    clock.advance(499)
    await Promise.resolve()
    expect(result).toBeUndefined()
    clock.advance(1)
    await pending
    expect(result).toBe('timer')
    expect(clock.pendingTimers).toBe(0)
  })

  it('rejects at once with the deadline’s reason when the deadline ends first, and releases its timer', async () => {
    const clock = new ManualClock()
    const deadline = Deadline.after(100, { clock })
    const pending = wait(10_000, { deadline })
    clock.advance(100)
    await expect(pending).rejects.toMatchObject({ code: 'DEADLINE_EXCEEDED' })
    expect(clock.pendingTimers).toBe(0)
  })

  it('rejects with the signal’s reason when aborted, and removes its listener', async () => {
    const clock = new ManualClock()
    const controller = new AbortController()
    const reason = new Error('caller left')
    const pending = wait(10_000, { clock, signal: controller.signal })
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1)
    controller.abort(reason)
    await expect(pending).rejects.toBe(reason)
    expect(clock.pendingTimers).toBe(0)
    // A settled wait leaves nothing on the signal.
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0)
  })

  it('fails at once, arming nothing, when the deadline or signal has already ended', async () => {
    const clock = new ManualClock()
    const deadline = Deadline.after(0, { clock })
    await expect(wait(1000, { deadline })).rejects.toMatchObject({ code: 'DEADLINE_EXCEEDED' })
    await expect(wait(1000, { clock, signal: AbortSignal.abort('x') })).rejects.toBe('x')
    expect(clock.pendingTimers).toBe(0)
  })

  it('an observe-only deadline never ends a wait', async () => {
    const clock = new ManualClock()
    const deadline = Deadline.after(10, { clock, observe: true })
    const pending = wait(100, { deadline })
    clock.advance(100)
    await expect(pending).resolves.toBe('timer')
  })

  it('resolves "woken" when wakeOn fires first, and unsubscribes however it ends', async () => {
    const clock = new ManualClock()
    const wakers = new Set<() => void>()
    const wakeOn = (wake: () => void) => {
      wakers.add(wake)
      return () => wakers.delete(wake)
    }
    const pending = wait(1000, { clock, wakeOn })
    expect(wakers.size).toBe(1)
    for (const w of wakers) w()
    await expect(pending).resolves.toBe('woken')
    expect(wakers.size).toBe(0)
    expect(clock.pendingTimers).toBe(0)
    const timed = wait(10, { clock, wakeOn })
    clock.advance(10)
    await expect(timed).resolves.toBe('timer')
    expect(wakers.size).toBe(0)
  })

  it('waits past 2^31−1 ms in steps instead of overflowing to 1 ms', async () => {
    const clock = new ManualClock()
    let done = false
    const pending = wait(3 * 2 ** 31, { clock }).then(() => {
      done = true
    })
    clock.advance(2 ** 31)
    await Promise.resolve()
    expect(done).toBe(false)
    clock.advance(2 * 2 ** 31)
    await pending
    expect(done).toBe(true)
  })

  it('keeps a plain script alive while awaited: the script prints and exits 0 (built package)', async () => {
    const fixture = fileURLToPath(new URL('./fixtures/await-wait.mjs', import.meta.url))
    const { stdout } = await run(process.execPath, [fixture, '300'], { timeout: 20_000 })
    const out = JSON.parse(stdout) as { how: string; waitedMs: number }
    expect(out.how).toBe('timer')
    expect(out.waitedMs).toBeGreaterThanOrEqual(299)
  })
})

describe('wait: many at once on one signal', () => {
  /** Lets process.emitWarning's 'warning' event (emitted on the next tick) arrive. */
  const warningsEmitted = () => new Promise<void>((resolve) => setImmediate(resolve))

  it('12 pending waits on a caller’s signal: no MaxListenersExceededWarning, one abort listener; the abort ends all 12 with its reason and leaves nothing behind', async () => {
    const warnings: Error[] = []
    const onWarning = (warning: Error) => warnings.push(warning)
    process.on('warning', onWarning)
    try {
      const clock = new ManualClock()
      const controller = new AbortController()
      // A batch backing off together under the one signal its caller gave it.
      const waits = Array.from({ length: 12 }, () =>
        wait(1000, { clock, signal: controller.signal }),
      )
      await warningsEmitted()
      expect(warnings.map((w) => w.name)).toEqual([])
      expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1)

      const reason = new Error('shutting down')
      controller.abort(reason)
      const outcomes = await Promise.allSettled(waits)
      expect(outcomes.every((o) => o.status === 'rejected' && o.reason === reason)).toBe(true)
      expect(clock.pendingTimers).toBe(0)
      expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0)

      // Waits that end on their own let go of the signal as well, the last one its listener.
      const other = new AbortController()
      const timed = Array.from({ length: 12 }, (_, i) =>
        wait(i + 1, { clock, signal: other.signal }),
      )
      clock.advance(6)
      await Promise.all(timed.slice(0, 6))
      expect(getEventListeners(other.signal, 'abort')).toHaveLength(1)
      clock.advance(6)
      expect(await Promise.all(timed)).toEqual(Array.from({ length: 12 }, () => 'timer'))
      expect(getEventListeners(other.signal, 'abort')).toHaveLength(0)
      await warningsEmitted()
      expect(warnings.map((w) => w.name)).toEqual([])
    } finally {
      process.off('warning', onWarning)
    }
  })
})

describe('deadlines and waits on one signal', () => {
  // Each records its end synchronously, where the signal's listener runs it
  // (a deadline's onCancel, a wait's wakeOn unsubscribe): recorded in a
  // wait's `.finally`, a microtask, every wait came after every deadline
  // whatever order they had subscribed in.
  it('6 deadlines following a caller’s signal and 6 waits on it, subscribed in turn, share one abort listener; its abort ends all 12 with its reason, in the order they subscribed, where the first stood among the signal’s listeners, and leaves none', async () => {
    const clock = new ManualClock()
    const controller = new AbortController()
    const { signal } = controller
    const order: string[] = []
    signal.addEventListener('abort', () => order.push('app, added before'), { once: true })
    const deadlines: Deadline[] = []
    const waits: Promise<unknown>[] = []
    for (let i = 0; i < 6; i++) {
      deadlines.push(
        Deadline.after(1000, {
          clock,
          signal,
          onCancel: () => {
            order.push(`deadline ${String(i)}`)
          },
        }),
      )
      waits.push(
        wait(1000, {
          clock,
          signal,
          wakeOn: () => () => {
            order.push(`wait ${String(i)}`)
          },
        }),
      )
      if (i === 0) {
        signal.addEventListener('abort', () => order.push('app, added after the first'), {
          once: true,
        })
      }
    }
    // The app's two, and one for all 12.
    expect(getEventListeners(signal, 'abort')).toHaveLength(3)

    const reason = new Error('shutting down')
    controller.abort(reason)
    expect(order).toEqual([
      'app, added before',
      ...deadlines.flatMap((_, i) => [`deadline ${String(i)}`, `wait ${String(i)}`]),
      'app, added after the first',
    ])
    const outcomes = await Promise.allSettled(waits)
    expect(outcomes.every((o) => o.status === 'rejected' && o.reason === reason)).toBe(true)
    expect(deadlines.every((d) => d.signal.aborted && d.signal.reason === reason)).toBe(true)
    expect(getEventListeners(signal, 'abort')).toHaveLength(0)
    expect(clock.pendingTimers).toBe(0)

    // A deadline disposed and a wait that ends on its own let go of it too.
    const other = new AbortController()
    const deadline = Deadline.after(1000, { clock, signal: other.signal })
    const timed = wait(5, { clock, signal: other.signal })
    expect(getEventListeners(other.signal, 'abort')).toHaveLength(1)
    clock.advance(5)
    expect(await timed).toBe('timer')
    expect(getEventListeners(other.signal, 'abort')).toHaveLength(1)
    deadline.dispose()
    expect(getEventListeners(other.signal, 'abort')).toHaveLength(0)
  })
})

describe('wait on a clock whose setTimeout returns no handle', () => {
  it('once aborted, its timer firing early later arms nothing more', async () => {
    const manual = new ManualClock()
    // Timers fire up to 1 ms early (libuv), and nothing can clear them.
    const handleless = {
      now: () => manual.now(),
      setTimeout: (callback: () => void, ms: number) => {
        manual.setTimeout(callback, Math.max(1, ms - 1))
        return undefined
      },
      clearTimeout: () => {},
    }
    const controller = new AbortController()
    const pending = wait(100, { clock: handleless, signal: controller.signal })
    controller.abort(new Error('stop'))
    await expect(pending).rejects.toThrow('stop')
    manual.advance(99)
    expect(manual.pendingTimers).toBe(0)
  })
})
