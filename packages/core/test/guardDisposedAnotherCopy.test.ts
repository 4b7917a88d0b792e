import { guard, ManualClock } from '@hourglass/core'
import { describe, expect, it } from 'vitest'

// `req.deadline` made by @hourglass/express's own copy of core, `guard` from
// the app's: disposed while guard waits (the handler opts out of it), that
// deadline no longer expires, and guard waits for the work. Guard asked a
// private field of its own copy, false for every deadline of another copy,
// and rejected with DEADLINE_EXCEEDED at the old expiry. The query makes a
// second instance of the module: a Deadline class of "another copy".
const other = (await import(
  // @ts-expect-error -- a query the module resolver does not type
  '../src/Deadline.ts?guard-disposed-copy'
)) as typeof import('../src/Deadline.js')

describe('guard on a deadline of another copy disposed while it waits', () => {
  it('waits for the work past the old expiry', async () => {
    const clock = new ManualClock()
    const deadline = other.Deadline.after(100, { clock })
    let finish: (value: string) => void = () => {}
    const work = new Promise<string>((resolve) => {
      finish = resolve
    })
    const guarded = guard(work, { deadline, slice: 'db' })
    clock.advance(10)
    deadline.dispose()
    clock.advance(200)
    finish('row')
    await expect(guarded).resolves.toBe('row')
  })

  it('is still ended by a cancel', async () => {
    const clock = new ManualClock()
    const deadline = other.Deadline.after(100, { clock })
    const guarded = guard(new Promise(() => {}), { deadline })
    deadline.dispose()
    deadline.cancel(new Error('client left'))
    await expect(guarded).rejects.toThrow('client left')
  })
})
