import { currentDeadline, Deadline, ManualClock, runWithDeadline } from '@hourglass/core'
import type { Job } from 'bullmq'
import { describe, expect, it } from 'vitest'
import { addWithDeadline, withDeadline } from '../src/index.js'
import { finished } from './support/observe.js'
import { available, useRedisQueues } from './support/redisQueues.js'

// A worker is often made where it is first needed: inside a request handler,
// a gRPC handler or a job. Everything it starts — its fetch loop, and with it
// every job it runs — keeps the async context it was made in, so a job with
// no deadline of its own ran under the deadline of the request that happened
// to create the worker (long over by then): its createFetch, callModel and
// gRPC calls were refused as out of time, though the README says such a job
// runs as before, with no currentDeadline().

describe.skipIf(!available)('a worker created inside a deadline', () => {
  const redis = useRedisQueues()

  it("runs jobs without a deadline with no current deadline, and jobs with one under their own, not the creator's", async () => {
    const { queue, events, name } = await redis.queue()
    const seen = new Map<string, Deadline | undefined>()
    const processor = withDeadline(async (job: Job) => {
      seen.set(job.name, currentDeadline())
    })
    const request = Deadline.after(100, { clock: new ManualClock() })
    runWithDeadline(request, () => redis.worker(name, processor))

    const plain = await queue.add('plain', {})
    const foreign = await queue.add('malformed', {}, {
      hourglass: { expiresAtMs: 'soon' },
    } as unknown as Parameters<typeof queue.add>[2])
    const own = await addWithDeadline(
      queue,
      'own',
      {},
      {
        deadline: Deadline.after(60_000, { clock: new ManualClock() }),
      },
    )
    for (const job of [plain, foreign, own]) {
      expect(await finished(job, events, queue)).toMatchObject({ ok: true })
    }

    expect(seen.get('plain')).toBeUndefined()
    expect(seen.get('malformed')).toBeUndefined()
    const ownDeadline = seen.get('own')
    expect(ownDeadline).toBeDefined()
    expect(ownDeadline).not.toBe(request)
    expect(ownDeadline!.budgetMs).toBeGreaterThan(1000)
  })
})
