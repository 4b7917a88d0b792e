import { Deadline, ManualClock, runningSlice } from '@hourglass/core'
import { expect, it } from 'vitest'
import { stillReachable } from './support/collectGarbage.js'

// `runningSlice` reads the last plan made under a deadline. Under one that
// lives as long as the process — a worker's shutdown deadline every job's is
// made under, `Deadline.never()` as a parent — that record kept the last
// job's plan, and through it its deadline, its slices and whatever their
// callbacks held, until the next job made a plan: for good in a process
// that then went quiet. A plan nobody holds any more is not kept.
it('does not keep a finished plan made under a long-lived deadline', async () => {
  const clock = new ManualClock()
  const worker = Deadline.never({ clock })
  const refs: WeakRef<object>[] = []
  async function job(): Promise<void> {
    const payload = { rows: new Array(1000).fill('row') }
    const own = worker.child(1000, { onCancel: () => payload.rows.length })
    const plan = own.plan({ fetch: 1, write: 1 }, { reserveMs: 0 })
    await plan.run('fetch', async () => payload.rows.length)
    await plan.run('write', async () => payload.rows.length)
    refs.push(new WeakRef(plan), new WeakRef(own), new WeakRef(payload))
    own.dispose()
  }
  await job()
  expect(await stillReachable(refs)).toBe(0)
  expect(runningSlice(worker)).toBeUndefined()
  worker.dispose()
})

it('still names the running slice of a plan its code holds', async () => {
  const clock = new ManualClock()
  const worker = Deadline.never({ clock })
  const own = worker.child(1000)
  own.plan({ fetch: 1 }, { reserveMs: 0 }).slice('fetch')
  expect(await stillReachable([new WeakRef(own)], 1)).toBe(1)
  expect(runningSlice(worker)).toBe('fetch')
  own.dispose()
  worker.dispose()
})
