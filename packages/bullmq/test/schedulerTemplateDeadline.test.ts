import { currentDeadline, Deadline } from '@hourglass/core'
import type { Job, JobsOptions } from 'bullmq'
import { describe, expect, it } from 'vitest'
import { addWithDeadline, bullmqChannels, withDeadline } from '../src/index.js'
import { collect, signal } from './support/observe.js'
import { available, redisNowMs, useRedisQueues } from './support/redisQueues.js'

// A job scheduler (`upsertJobScheduler`) stamps every run with its
// template's options. A template given an `hourglass` option — typically
// another job's, copied with `{ ...job.opts }` to keep its `attempts` and
// `backoff` — gave every run the one absolute expiry recorded when that job
// was added: the runs before it were bounded by it, and every run after it
// was failed unrun (`deadline_exceeded`), for as long as the scheduler lived.
// Such an expiry is nobody's deadline: the run is treated as having none,
// and reported on `hourglass:bullmq:invalid`, as a malformed one is.

describe.skipIf(!available)('withDeadline: a job made by a job scheduler', () => {
  const redis = useRedisQueues()

  const runOnce = async (
    name: string,
    processor: (job: Job) => Promise<unknown>,
  ): Promise<{ job: Job; outcome: string }> => {
    const ended = signal<{ job: Job; outcome: string }>()
    const worker = redis.worker(name, withDeadline(processor))
    worker.on('completed', (job) => ended.resolve({ job, outcome: 'completed' }))
    worker.on('failed', (job, error) =>
      ended.resolve({ job: job!, outcome: `failed: ${error.message}` }),
    )
    const result = await ended.promise
    await worker.close()
    return result
  }

  it("runs each run without the template's expiry, reporting it on invalid, whether that expiry has passed or not", async () => {
    const { queue, name } = await redis.queue()
    const invalid = collect(bullmqChannels.invalid)
    const starts = collect(bullmqChannels.start)

    // The template copied from a job added under a minute's deadline.
    const model = await addWithDeadline(queue, 'model', {}, { deadline: Deadline.after(60_000) })
    await model.remove()
    expect(model.opts).toHaveProperty('hourglass')
    await queue.upsertJobScheduler(
      'copied',
      { every: 3_600_000 },
      { name: 'tick', data: {}, opts: { ...model.opts } },
    )
    let seen: Deadline | undefined | 'not run' = 'not run'
    const first = await runOnce(name, async () => {
      seen = currentDeadline()
      return 'ran'
    })
    expect(first.outcome).toBe('completed')
    expect(first.job.repeatJobKey).toBe('copied')
    expect(seen).toBeUndefined()
    await queue.removeJobScheduler('copied')

    // A template whose expiry has passed: every run was failed unrun.
    const now = await redisNowMs(redis.client())
    await queue.upsertJobScheduler(
      'expired',
      { every: 3_600_000 },
      {
        name: 'tock',
        data: {},
        opts: { hourglass: { expiresAtMs: now - 1_000, budgetMs: 500 } } as JobsOptions,
      },
    )
    const second = await runOnce(name, async () => 'ran')
    expect(second.outcome).toBe('completed')
    expect(second.job.repeatJobKey).toBe('expired')
    await queue.removeJobScheduler('expired')

    expect(starts).toEqual([])
    const reason = "from a job scheduler's template: one expiry for every run"
    expect(invalid).toEqual([
      {
        jobId: first.job.id,
        queue: name,
        name: 'tick',
        attempt: 1,
        field: 'hourglass',
        value: 'an object',
        reason,
      },
      {
        jobId: second.job.id,
        queue: name,
        name: 'tock',
        attempt: 1,
        field: 'hourglass',
        value: 'an object',
        reason,
      },
    ])
  })

  it('leaves a job re-added with a scheduled job’s options by addWithDeadline its own deadline', async () => {
    // BullMQ keeps the scheduler's key out of `job.opts`: a job added with a
    // scheduled run's options is no scheduled run, and keeps its deadline.
    const { queue, name } = await redis.queue()
    await queue.upsertJobScheduler('s', { every: 3_600_000 }, { name: 'tick', data: {} })
    const [scheduled] = await queue
      .getDelayed()
      .then(async (d) => (d.length ? d : queue.getWaiting()))
    await queue.removeJobScheduler('s')
    await scheduled!.remove()
    const job = await addWithDeadline(
      queue,
      'again',
      {},
      {
        ...scheduled!.opts,
        deadline: Deadline.after(60_000),
      },
    )
    expect(job.repeatJobKey).toBeUndefined()
    let seen: Deadline | undefined
    const run = await runOnce(name, async () => {
      seen = currentDeadline()
      return 'ran'
    })
    expect(run.outcome).toBe('completed')
    expect(seen).toBeDefined()
  })
})
