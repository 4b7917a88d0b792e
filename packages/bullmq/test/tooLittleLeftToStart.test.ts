import { Deadline } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { addWithDeadline, bullmqChannels, withDeadline } from '../src/index.js'
import { collect, finished } from './support/observe.js'
import { available, useRedisQueues } from './support/redisQueues.js'

// `minBudgetMs` refuses a job that still has time, just not enough to start.
// Its failedReason is what an operator reads: it must say how much was left,
// not claim the job arrived "0 ms after its deadline" when it came before it.

describe.skipIf(!available)('a job with less than minBudgetMs left', () => {
  const redis = useRedisQueues()

  it('is failed unrun with a reason that says how much time it still had, not that it came late', async () => {
    const { queue, events, name } = await redis.queue()
    const expired = collect(bullmqChannels.expire)
    const job = await addWithDeadline(queue, 'short', {}, { deadline: Deadline.after(60_000) })
    let calls = 0
    const processor = withDeadline(
      async () => {
        calls++
      },
      { minBudgetMs: 120_000 },
    )
    redis.worker(name, processor)
    const result = await finished(job, events, queue)

    expect(calls).toBe(0)
    expect(result.state).toBe('failed')
    expect(result.failedReason).toMatch(
      /^deadline_exceeded: job \d+ of q\d+-\d+ reached a worker with \d+ ms left, too little to start \(added with \d+ ms left\); not run$/,
    )
    const left = Number(/with (\d+) ms left, too little/.exec(result.failedReason ?? '')?.[1])
    expect(left).toBeGreaterThan(50_000)
    expect(expired).toEqual([expect.objectContaining({ lateMs: 0, outcome: 'expired' })])
    // Both are the time left, rounded (the message) or floored (the event).
    expect(Math.abs(expired[0]!.remainingMs - left)).toBeLessThanOrEqual(1)
  })
})
