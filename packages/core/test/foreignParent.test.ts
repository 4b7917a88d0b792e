import { Deadline, ManualClock } from '@hourglass/core'
import { describe, expect, it } from 'vitest'

// Two installed copies of core (two versions in one tree) share the one
// context, so currentDeadline() may hand one copy's deadline to the other.
// The query makes a second instance of the module: a Deadline class of its
// own, as another copy's is.
const { Deadline: OtherDeadline } = (await import(
  // @ts-expect-error -- a query the module resolver does not type
  '../src/Deadline.ts?second-copy'
)) as { Deadline: typeof Deadline }

describe('Deadline.after under a parent from another copy of core', () => {
  it('is a second module instance (the premise)', () => {
    expect(OtherDeadline).not.toBe(Deadline)
  })

  it('makes the child through the parent’s own child(): min(parent, ms), aborted with it', () => {
    const clock = new ManualClock()
    const parent = OtherDeadline.after(100, { clock })
    const child = Deadline.after(500, { parent, name: 'step' })
    expect(child.expiresAt).toBe(100)
    expect(child.name).toBe('step')
    expect(child.parent).toBe(parent)
    const reason = new Error('client left')
    parent.cancel(reason)
    expect(child.signal.aborted).toBe(true)
    expect(child.reason).toBe(reason)
  })

  it('expires with the parent, and a shorter child first', () => {
    const clock = new ManualClock()
    const parent = OtherDeadline.after(100, { clock })
    const short = Deadline.after(30, { parent })
    const same = Deadline.after(1000, { parent })
    clock.advance(30)
    expect(short.done).toBe(true)
    expect(same.done).toBe(false)
    clock.advance(70)
    expect(parent.done).toBe(true)
    expect(same.done).toBe(true)
  })

  it('refuses a parent that is no deadline at all, naming it', () => {
    const bogus = { expiresAt: 5 } as unknown as Deadline
    expect(() => Deadline.after(10, { parent: bogus })).toThrow(
      new TypeError('Deadline.after: options.parent must be a Deadline, got an object'),
    )
  })
})
