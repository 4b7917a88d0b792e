import { Deadline, guard, isDeadlineExceeded, ManualClock } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { lazyQuery } from './support/lazyQuery.js'

/**
 * A lazy thenable (a knex or objection query builder, a mongoose Query, a
 * drizzle query) runs its query when its `then` is called. guard refused it
 * — deadline over, client gone, a bad option — and still called `then` to
 * handle a later rejection: the query nobody would wait for was sent.
 */

describe('guard does not run a lazy thenable it refuses', () => {
  it('under a deadline that has expired', async () => {
    const query = lazyQuery()
    const deadline = Deadline.after(0, { clock: new ManualClock() })
    await expect(guard(query as unknown as Promise<string>, { deadline })).rejects.toSatisfy(
      isDeadlineExceeded,
    )
    expect(query.runs).toBe(0)
    expect(query.cancels).toBe(1)
  })

  it('under a deadline that was cancelled', async () => {
    const query = lazyQuery()
    const deadline = Deadline.after(1000, { clock: new ManualClock() })
    const reason = new Error('client left')
    deadline.cancel(reason)
    await expect(guard(query as unknown as Promise<string>, { deadline })).rejects.toBe(reason)
    expect(query.runs).toBe(0)
  })

  it('given an option it refuses', async () => {
    const query = lazyQuery()
    await expect(
      guard(query as unknown as Promise<string>, { slice: 5 as unknown as string }),
    ).rejects.toBeInstanceOf(TypeError)
    expect(query.runs).toBe(0)
  })

  it('returned by a function whose synchronous part ended the deadline', async () => {
    const query = lazyQuery()
    const deadline = Deadline.after(1000, { clock: new ManualClock() })
    const reason = new Error('gone')
    const guarded = guard(
      () => {
        deadline.cancel(reason)
        return query as unknown as Promise<string>
      },
      { deadline },
    )
    await expect(guarded).rejects.toBe(reason)
    expect(query.runs).toBe(0)
    expect(query.cancels).toBe(1)
  })

  it('still handles a refused native promise that rejects later', async () => {
    const unhandled: unknown[] = []
    const onUnhandled = (error: unknown) => unhandled.push(error)
    process.on('unhandledRejection', onUnhandled)
    try {
      let rejectLater: (error: Error) => void = () => {}
      const late = new Promise<string>((_, reject) => {
        rejectLater = reject
      })
      const deadline = Deadline.after(0, { clock: new ManualClock() })
      await expect(guard(late, { deadline })).rejects.toSatisfy(isDeadlineExceeded)
      rejectLater(new Error('late'))
      await new Promise((resolve) => setImmediate(resolve))
      await new Promise((resolve) => setImmediate(resolve))
      expect(unhandled).toEqual([])
    } finally {
      process.off('unhandledRejection', onUnhandled)
    }
  })
})
