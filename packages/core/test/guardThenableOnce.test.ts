import { Deadline, guard, ManualClock } from '@hourglass/core'
import { expect, it } from 'vitest'
import { lazyQuery } from './support/lazyQuery.js'

// A lazy thenable (a knex or objection query builder, a mongoose Query):
// each call of its `then` runs the query once, and mongoose refuses a
// second run ("Query was already executed"). guard must adopt it once.

it('runs a lazy thenable once and answers with its result', async () => {
  const clock = new ManualClock()
  const deadline = Deadline.after(1000, { clock })
  const query = lazyQuery()
  // The deadline's own timer; guard's is released once it answers.
  const before = clock.pendingTimers
  await expect(guard(query as unknown as Promise<string>, { deadline })).resolves.toBe('rows')
  expect(query.runs).toBe(1)
  expect(clock.pendingTimers).toBe(before)
})

it('runs it once when the deadline is cancelled while it is pending', async () => {
  const deadline = Deadline.after(1000, { clock: new ManualClock() })
  const query = lazyQuery()
  const guarded = guard(query as unknown as Promise<string>, { deadline })
  const reason = new Error('caller left')
  deadline.cancel(reason)
  await expect(guarded).rejects.toBe(reason)
  expect(query.runs).toBe(1)
})
