import { Deadline, ManualClock, outcomeWithin, untilEnded } from '@hourglass/core'
import { expect, it } from 'vitest'
import { lazyQuery } from './support/lazyQuery.js'

// A lazy thenable (a query builder) runs its query when `then` is called.
// With the deadline or the signal already over, the wait rejects without
// waiting: nothing should start the query either.

it('untilEnded does not run a lazy thenable under a deadline already over', async () => {
  const query = lazyQuery()
  const deadline = Deadline.after(0, { clock: new ManualClock() })
  await expect(untilEnded(query as unknown as Promise<string>, { deadline })).rejects.toBe(
    deadline.reason,
  )
  expect(query.runs).toBe(0)
})

it('outcomeWithin does not run it under a signal already aborted', async () => {
  const query = lazyQuery()
  const controller = new AbortController()
  const reason = new Error('client left')
  controller.abort(reason)
  await expect(
    outcomeWithin(query as unknown as Promise<string>, 100, { signal: controller.signal }),
  ).rejects.toBe(reason)
  expect(query.runs).toBe(0)
})

it('still runs it once, and answers with it, while the bound is live', async () => {
  const query = lazyQuery()
  const deadline = Deadline.after(1000, { clock: new ManualClock() })
  await expect(untilEnded(query as unknown as Promise<string>, { deadline })).resolves.toBe('rows')
  expect(query.runs).toBe(1)
})
