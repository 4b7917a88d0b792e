import { Deadline } from '@hourglass/core'
import type { Job, JobsOptions } from 'bullmq'
import { expect, it } from 'vitest'
import { addWithDeadline, type QueueLike } from '../src/index.js'

// BullMQ's own `queue.add(name, data, null)` takes `null` as no options;
// addWithDeadline destructured it and threw "Cannot destructure property
// 'deadline' of 'null'".
it('addWithDeadline takes null options as none, as queue.add does', async () => {
  const added: Array<[string, unknown, JobsOptions | undefined]> = []
  const queue: QueueLike<unknown, unknown, string> = {
    name: 'q',
    qualifiedName: 'bull:q',
    backend: undefined,
    add: async (name, data, opts) => {
      added.push([name, data, opts])
      return { name, data, opts } as unknown as Job
    },
  }
  await addWithDeadline(queue, 'job', { n: 1 }, null)
  expect(added).toEqual([['job', { n: 1 }, {}]])
  // A deadline that never expires is stored as none: the options still pass through.
  await addWithDeadline(queue, 'job', { n: 2 }, { deadline: Deadline.never() })
  expect(added[1]).toEqual(['job', { n: 2 }, {}])
})
