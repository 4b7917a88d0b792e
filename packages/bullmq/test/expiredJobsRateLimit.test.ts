import { Deadline } from '@hourglass/core'
import type { Job } from 'bullmq'
import { describe, expect, it } from 'vitest'
import { addWithDeadline, withDeadline } from '../src/index.js'
import { finished } from './support/observe.js'
import { available, redisClockPasses, storedExpiry, useRedisQueues } from './support/redisQueues.js'

// BullMQ's moveToActive counts every job it hands a worker against the rate
// limit, except one it fails unrun itself (a deferred failure). A job
// withDeadline failed unrun for its deadline was counted: a backlog of
// expired jobs was drained one limiter window per dead job, and a live job
// behind them reached the worker after its own deadline, failed unrun too.

describe.skipIf(!available)('a rate-limited worker and expired jobs', () => {
  const redis = useRedisQueues()

  it('does not spend a limiter slot on a job it fails unrun: the live job behind two expired ones runs at once', async () => {
    const { queue, events, name } = await redis.queue()
    await queue.waitUntilReady()
    const dead: Job[] = []
    for (let i = 0; i < 2; i++) {
      dead.push(await addWithDeadline(queue, 'dead', {}, { deadline: Deadline.after(100) }))
    }
    await redisClockPasses(redis.client(), Math.max(...dead.map(storedExpiry)))
    const live = await addWithDeadline(queue, 'live', {}, { deadline: Deadline.after(1_500) })
    let ran = 0
    const processor = withDeadline(async () => {
      ran++
      return 'ok'
    })
    // One job per 2 s: counted, the two dead jobs held the live one 4 s, past its 1.5 s.
    redis.worker(name, processor, { limiter: { max: 1, duration: 2_000 } })

    const result = await finished(live, events, queue)
    expect(result.state).toBe('completed')
    expect(ran).toBe(1)
    expect(processor.counts.expired).toBe(2)
    // Only the live job is counted in the window.
    expect(await redis.client().get(`bull:${name}:limiter`)).toBe('1')
  })

  it('still limits the jobs it runs', async () => {
    const { queue, events, name } = await redis.queue()
    const jobs: Job[] = []
    for (let i = 0; i < 2; i++) {
      jobs.push(await addWithDeadline(queue, 'live', {}, { deadline: Deadline.after(10_000) }))
    }
    const startedAt: number[] = []
    redis.worker(
      name,
      withDeadline(async () => {
        startedAt.push(Date.now())
      }),
      { limiter: { max: 1, duration: 1_000 } },
    )
    for (const job of jobs) await finished(job, events, queue)
    expect(startedAt).toHaveLength(2)
    expect(startedAt[1]! - startedAt[0]!).toBeGreaterThanOrEqual(900)
  })
})
