import { Deadline, wait } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { addWithDeadline, withDeadline } from '../src/index.js'
import { available, useRedisQueues } from './support/redisQueues.js'
import { settled } from './support/settled.js'

// Issue 18's measured claim about jobs that expire in the queue. The bench
// (`npm run bench`, section 18b) reports it against plain BullMQ.

describe.skipIf(!available)('jobs that wait past their deadline, measured', () => {
  const redis = useRedisQueues()

  it('1,000 jobs with 1.5 s deadlines, worker paused until 0.3 s past their deadlines, then resumed: none of them runs, every one is counted as expired', async () => {
    const JOBS = 1_000
    const { queue, name } = await redis.queue<{ i: number }>()
    let ran = 0
    const processor = withDeadline<{ i: number }>(async () => {
      ran++
    })
    const worker = redis.worker(name, processor, { concurrency: 50 })
    await worker.waitUntilReady()
    await worker.pause()

    const deadlines = Array.from({ length: JOBS }, () => Deadline.after(1_500))
    const added = performance.now()
    await Promise.all(
      deadlines.map((deadline, i) =>
        addWithDeadline(queue, 'job', { i }, { deadline, attempts: 3 }),
      ),
    )
    const addMs = performance.now() - added
    // The scenario: the worker is away until every job's deadline has passed
    // (each was added with time left: adding them takes ~0.6 s on a loaded
    // box), and 300 ms more. Not a fixed time after the last add: the time
    // past the deadlines proves nothing more.
    await wait(Math.max(...deadlines.map((deadline) => deadline.remaining())) + 300)
    const drained = settled(worker, JOBS)
    const resumed = performance.now()
    worker.resume()
    await drained
    const drainMs = performance.now() - resumed

    const failed = await queue.getFailed(0, -1)
    console.log(
      `[bullmq] ${JOBS} jobs added in ${addMs.toFixed(0)} ms; after the pause the worker failed them all in ${drainMs.toFixed(0)} ms; ran ${ran}, counted expired ${processor.counts.expired}`,
    )
    expect(ran).toBe(0)
    expect(processor.counts.expired).toBe(JOBS)
    expect(failed).toHaveLength(JOBS)
    expect(failed.every((job) => job.failedReason.startsWith('deadline_exceeded: '))).toBe(true)
    expect(failed.every((job) => job.attemptsMade === 1)).toBe(true) // attempts: 3, none retried
    expect(await queue.getWaitingCount()).toBe(0)
  }, 30_000)
})
