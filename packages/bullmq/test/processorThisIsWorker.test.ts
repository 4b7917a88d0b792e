import { Deadline } from '@hourglass/core'
import { type Job, Worker } from 'bullmq'
import { describe, expect, it } from 'vitest'
import { addWithDeadline, withDeadline } from '../src/index.js'
import { finished } from './support/observe.js'
import { available, useRedisQueues } from './support/redisQueues.js'

// BullMQ calls a function processor as a method of its Worker
// (`this.processFn(job, token, signal)`): a `function` processor's `this` is
// the worker that took the job, and processors use it (`this.rateLimit(ms)`
// before `throw Worker.RateLimitError()`, `this.name`, `this.id`). The README
// promises that jobs without a deadline run "exactly as before" under
// `withDeadline`, and a job with one differs only by its deadline.
describe.skipIf(!available)("withDeadline keeps the processor's `this` (BullMQ's Worker)", () => {
  const redis = useRedisQueues()

  it('a function processor sees the worker as `this`, for a plain job and for one with a deadline', async () => {
    const { queue, events, name } = await redis.queue()
    const seen: unknown[] = []
    const worker = redis.worker(
      name,
      withDeadline(async function (this: unknown, job: Job) {
        seen.push(this)
        return job.name
      }),
    )
    const plain = await queue.add('plain', {})
    expect(await finished(plain, events, queue)).toMatchObject({ ok: true, value: 'plain' })
    const timed = await addWithDeadline(queue, 'timed', {}, { deadline: Deadline.after(20_000) })
    expect(await finished(timed, events, queue)).toMatchObject({ ok: true, value: 'timed' })
    // What BullMQ alone gives (a `function` processor unwrapped) is the worker, both times.
    expect(seen.map((self) => (self === worker ? 'the worker' : String(self)))).toEqual([
      'the worker',
      'the worker',
    ])
    expect(worker).toBeInstanceOf(Worker)
  })
})
