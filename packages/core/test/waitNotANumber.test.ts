import { type Clock, systemClock, wait } from '@hourglass/core'
import { expect, it } from 'vitest'

// wait() documents that a NaN, negative or zero `ms` resolves at once. A value
// that is not a number at all — undefined from a missing option, a header
// string — made its end NaN, and a wait whose end is NaN never ends: the
// retry or cooldown that awaited it hung for good, no timer, no error. A
// clock that reads NaN did the same. Both are refused, as Deadline.after
// refuses them.

it('rejects with a TypeError for an ms that is not a number, instead of never settling', async () => {
  await expect(wait(undefined as unknown as number)).rejects.toThrow(
    new TypeError('wait expects a number of ms, got undefined'),
  )
  await expect(wait('100' as unknown as number)).rejects.toThrow(TypeError)
})

it('rejects with a TypeError when the clock reads NaN, instead of never settling', async () => {
  const broken: Clock = { ...systemClock, now: () => Number.NaN }
  await expect(wait(10, { clock: broken })).rejects.toThrow(
    new TypeError('clock.now() must return a number of ms, got NaN'),
  )
})

it('still resolves at once for NaN ms, as documented', async () => {
  await expect(wait(Number.NaN)).resolves.toBe('timer')
})
