import {
  Deadline,
  ManualClock,
  outcomeWithin,
  systemClock,
  untilEnded,
  wait,
} from '@hourglass/core'
import { expect, it } from 'vitest'

// `wait`'s `clock` option was used unchecked, where every other taker of a
// clock (Deadline.after, the ingresses, the propagator) refuses one that is
// no Clock when given. The class passed for an instance (`{ clock:
// ManualClock }`) threw "clock.now is not a function" synchronously, out of
// a function whose callers only handle its rejection; a clock without
// `clearTimeout` armed the wait, and the abort that ended it early threw
// from the signal's listener: the wait never settled and the error was
// uncaught. Each is now a rejection naming the option, before anything is armed.

const refusal = (name: string, got: string) =>
  new TypeError(`${name}: clock must be a Clock ({ now, setTimeout, clearTimeout }), got ${got}`)

it('rejects (never throws) a clock that is the class ManualClock, naming it', async () => {
  let waiting: Promise<unknown> | undefined
  expect(() => {
    waiting = wait(100, { clock: ManualClock as unknown as ManualClock })
  }).not.toThrow()
  await expect(waiting).rejects.toThrow(refusal('wait', 'the class ManualClock, not an instance'))
})

it('refuses a clock without clearTimeout at the call: the abort that ends the wait cannot throw', async () => {
  const { clearTimeout: _, ...noClear } = systemClock
  const controller = new AbortController()
  const waiting = wait(10_000, { clock: noClear as typeof systemClock, signal: controller.signal })
  controller.abort(new Error('stop'))
  await expect(waiting).rejects.toThrow(refusal('wait', 'an object'))
})

it('outcomeWithin and untilEnded refuse it too, naming themselves', async () => {
  const deadline = Deadline.after(1000, { clock: new ManualClock() })
  await expect(outcomeWithin(new Promise(() => {}), 100, { clock: 5 as never })).rejects.toThrow(
    refusal('outcomeWithin', '5'),
  )
  await expect(untilEnded(new Promise(() => {}), { deadline, clock: {} as never })).rejects.toThrow(
    refusal('untilEnded', 'an object'),
  )
  deadline.dispose()
})

it('still reads a null clock as none', async () => {
  await expect(wait(0, { clock: null as never })).resolves.toBe('timer')
})
