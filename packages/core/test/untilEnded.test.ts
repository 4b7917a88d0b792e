import {
  ClientClosedError,
  Deadline,
  isDeadlineExceeded,
  ManualClock,
  untilEnded,
  wait,
} from '@hourglass/core'
import { describe, expect, it } from 'vitest'

const never = new Promise<never>(() => {})

describe('untilEnded', () => {
  it("is the promise's outcome when it settles first", async () => {
    const clock = new ManualClock()
    using deadline = Deadline.after(1000, { clock })
    await expect(untilEnded(Promise.resolve(7), { deadline })).resolves.toBe(7)
    await expect(untilEnded(Promise.reject(new Error('store down')), { deadline })).rejects.toThrow(
      'store down',
    )
  })

  it("ends with the deadline's reason when the deadline ends first, and with the signal's when it aborts", async () => {
    const clock = new ManualClock()
    const deadline = Deadline.after(1000, { clock })
    const waiting = untilEnded(never, { deadline }).catch((e: unknown) => e)
    clock.advance(1000)
    expect(isDeadlineExceeded(await waiting)).toBe(true)

    const controller = new AbortController()
    const aborted = untilEnded(never, { signal: controller.signal }).catch((e: unknown) => e)
    controller.abort(new ClientClosedError())
    expect(await aborted).toBeInstanceOf(ClientClosedError)
  })

  it("without a deadline or a signal is the promise's outcome, whenever it comes", async () => {
    await expect(untilEnded(Promise.resolve(1), {})).resolves.toBe(1)
  })

  it('deadline: false is none, as omitted: it holds no timer open while the work is pending', async () => {
    const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length
    const before = timers()
    void untilEnded(never, { deadline: false })
    // Through wait(Infinity), a pending promise kept the process alive for good.
    expect(timers()).toBe(before)
    await expect(untilEnded(Promise.resolve(2), { deadline: false })).resolves.toBe(2)
  })
})

describe('untilEnded, called when the deadline or the signal has already ended', () => {
  it('rejects at once, and the promise failing later is no unhandled rejection', async () => {
    const unhandled: unknown[] = []
    const listener = (reason: unknown) => unhandled.push(reason)
    process.on('unhandledRejection', listener)
    try {
      const deadline = Deadline.after(1000, { clock: new ManualClock() })
      const left = new ClientClosedError()
      deadline.cancel(left)
      const controller = new AbortController()
      controller.abort(new Error('caller aborted'))
      const fails: Array<(error: Error) => void> = []
      const work = () => new Promise<never>((_, reject) => fails.push(reject))
      await expect(untilEnded(work(), { deadline })).rejects.toBe(left)
      await expect(untilEnded(work(), { signal: controller.signal })).rejects.toThrow(
        'caller aborted',
      )
      for (const fail of fails) fail(new Error('store down'))
      // Unhandled rejections are reported once the microtasks have run: one turn of the loop.
      await new Promise((resolve) => setImmediate(resolve))
      await new Promise((resolve) => setImmediate(resolve))
      expect(unhandled).toEqual([])
    } finally {
      process.off('unhandledRejection', listener)
    }
  })
})

describe('untilEnded and wait with odd options', () => {
  // They threw "Cannot read properties of null/undefined (reading 'deadline')",
  // and a value that is no Promise "work.catch is not a function".
  it('null or omitted options read as none; a plain value is awaited as await would', async () => {
    await expect(untilEnded(Promise.resolve(1), null)).resolves.toBe(1)
    await expect(untilEnded(Promise.resolve(2))).resolves.toBe(2)
    const clock = new ManualClock()
    const deadline = Deadline.after(100, { clock })
    await expect(untilEnded(3 as unknown as Promise<number>, { deadline })).resolves.toBe(3)
    const waited = wait(5, null)
    await expect(waited).resolves.toBe('timer')
  })
})
