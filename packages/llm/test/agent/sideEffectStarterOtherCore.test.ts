import {
  currentDeadline,
  type Deadline,
  expiryError,
  isDeadlineExceeded,
  ManualClock,
  runWithDeadline,
} from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { MemorySideEffectStore } from '../../src/agent/MemorySideEffectStore.js'
import { sideEffect } from '../../src/agent/sideEffect.js'

// An app with two installed copies of @hourglass/core: the one its Express
// app's deadline() makes `req.deadline` with, and this package's. The
// starter's deadline is then no `Deadline` of this package's copy.
const other = (await import(
  // @ts-expect-error -- a query the module resolver does not type
  '../../../core/src/Deadline.ts?side-effect-other-core'
)) as typeof import('../../../core/src/Deadline.js')

/** `Promise.withResolvers` for Node 20. */
function deferred<T = void>() {
  let resolve!: (value: T) => void
  const promise = new Promise<T>((r) => {
    resolve = r
  })
  return { promise, resolve }
}

describe('sideEffect: a starter whose deadline comes from another copy of core', () => {
  it('refused for lack of the starter’s budget before its timer ran: a joiner with time left runs its own', async () => {
    const clock = new ManualClock()
    const store = new MemorySideEffectStore()
    const deadlines: Array<Deadline | undefined> = []
    const firstStarted = deferred()
    const refuse = deferred()
    const fn = async () => {
      const deadline = currentDeadline()
      deadlines.push(deadline)
      if (deadlines.length > 1) return 'sent by the joiner’s run'
      firstStarted.resolve()
      await refuse.promise
      // What @hourglass/fetch throws when the starter's budget is under its minBudgetMs.
      throw expiryError(deadline!)
    }
    const starterDeadline = other.Deadline.after(300, { clock })
    const joinerDeadline = other.Deadline.after(5000, { clock })
    expect(starterDeadline.constructor).not.toBe((await import('@hourglass/core')).Deadline)
    const starter = runWithDeadline(starterDeadline, () => sideEffect('send', fn, { store }))
    starter.catch(() => {})
    const joiner = runWithDeadline(joinerDeadline, () => sideEffect('send', fn, { store }))
    await firstStarted.promise
    refuse.resolve()
    await expect(starter).rejects.toSatisfy(isDeadlineExceeded)
    expect(starterDeadline.reason).toBeUndefined()
    // Before: the joiner, seconds left, was handed the starter's 504.
    expect(await joiner).toBe('sent by the joiner’s run')
    expect(deadlines).toEqual([starterDeadline, joinerDeadline])
    starterDeadline.dispose()
    joinerDeadline.dispose()
  })
})
