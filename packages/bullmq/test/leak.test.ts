import { getEventListeners } from 'node:events'
import { Deadline, ManualClock } from '@hourglass/core'
import type { Job } from 'bullmq'
import { describe, expect, it } from 'vitest'
import { addWithDeadline, withDeadline } from '../src/index.js'
import { available, redisClockPasses, storedExpiry, useRedisQueues } from './support/redisQueues.js'

describe.skipIf(!available)('withDeadline releases what each job took', () => {
  const redis = useRedisQueues()

  it("after jobs that complete, fail, are stopped by their deadline, cancelled by BullMQ or expire in the queue, no listener is left on BullMQ's signals and no deadline timer is pending", async () => {
    const { queue, name } = await redis.queue<{ kind: string }>()
    const clock = new ManualClock()
    const bullSignals: AbortSignal[] = []
    let blocked = 0
    let allBlocked: () => void = () => {}
    const inner = withDeadline<{ kind: string }>(
      async (job, _token, signal) => {
        if (job.data.kind === 'ok') return 'ok'
        if (job.data.kind === 'fail') throw new Error('boom')
        // 'block': wait for the deadline or for BullMQ's cancel.
        await new Promise<void>((_resolve, reject) => {
          signal!.addEventListener('abort', () => reject(signal!.reason), { once: true })
          if (++blocked === PER_KIND) allBlocked()
        })
      },
      { clock },
    )
    // BullMQ hands its signal to the outer function; keep it to count listeners on it.
    const processor = (job: Job<{ kind: string }>, token?: string, signal?: AbortSignal) => {
      bullSignals.push(signal!)
      return inner(job, token, signal)
    }
    const PER_KIND = 100
    const settled = new Set<string>()
    let target = 0
    let done: () => void = () => {}
    const worker = redis.worker(name, processor, { concurrency: PER_KIND })
    const onEnd = (job: Job | undefined) => {
      settled.add(job!.id!)
      if (settled.size === target) done()
    }
    worker.on('completed', onEnd)
    worker.on('failed', onEnd)
    const settle = (count: number) => {
      target += count
      return new Promise<void>((resolve) => {
        done = resolve
      })
    }
    // After every round: nothing left on any signal BullMQ handed us, no timer armed.
    const leftBehind = () => ({
      listeners: bullSignals.reduce((n, s) => n + getEventListeners(s, 'abort').length, 0),
      timers: clock.pendingTimers,
    })
    const add = (kind: string, n: number, deadline: () => Deadline) =>
      Promise.all(
        Array.from({ length: n }, () =>
          addWithDeadline(queue, kind, { kind }, { deadline: deadline() }),
        ),
      )

    // Completed and failed (attempts: 1): the deadline ends with the job.
    let round = settle(2 * PER_KIND)
    await add('ok', PER_KIND, () => Deadline.after(60_000))
    await add('fail', PER_KIND, () => Deadline.after(60_000))
    await round
    expect(leftBehind()).toEqual({ listeners: 0, timers: 0 })

    // Stopped by the deadline while running.
    round = settle(PER_KIND)
    let blockedNow = new Promise<void>((resolve) => {
      allBlocked = resolve
    })
    await add('block', PER_KIND, () => Deadline.after(60_000))
    await blockedNow
    clock.advance(60_001)
    await round
    expect(leftBehind()).toEqual({ listeners: 0, timers: 0 })

    // Cancelled by BullMQ.
    round = settle(PER_KIND)
    blocked = 0
    blockedNow = new Promise<void>((resolve) => {
      allBlocked = resolve
    })
    await add('block', PER_KIND, () => Deadline.after(60_000))
    await blockedNow
    worker.cancelAllJobs('shutting down')
    await round
    expect(leftBehind()).toEqual({ listeners: 0, timers: 0 })

    // Expired in the queue: never run, nothing armed. The producer's deadlines
    // are on a manual clock, so adding 100 jobs on a loaded box cannot outlast
    // them (a real 500 ms one could, and its add would throw); they run out on
    // the Redis clock.
    await worker.pause()
    const producerClock = new ManualClock()
    const added = await add('ok', PER_KIND, () => Deadline.after(50, { clock: producerClock }))
    await redisClockPasses(redis.client(), Math.max(...added.map(storedExpiry)))
    round = settle(PER_KIND)
    worker.resume()
    await round

    expect(settled.size).toBe(5 * PER_KIND)
    expect(inner.counts).toEqual({ expired: PER_KIND, stopped: PER_KIND, retriesDropped: 0 })
    expect(bullSignals).toHaveLength(5 * PER_KIND)
    expect(leftBehind()).toEqual({ listeners: 0, timers: 0 })
  })
})
