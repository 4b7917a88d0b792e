import { subscribe, unsubscribe } from 'node:diagnostics_channel'
import type { Socket } from 'node:net'
import { Deadline } from '@hourglass/core'
import { createFetch } from '@hourglass/fetch'
import { afterEach, describe, expect, it, onTestFinished } from 'vitest'
import { addWithDeadline, withDeadline } from '../src/index.js'
import { available, useRedisQueues } from './support/redisQueues.js'
import { settled } from './support/settled.js'
import { monotonicMs, type SlowServer, startSlowServer } from './support/startSlowServer.js'

// Issue 18's measured claim about jobs running at their deadline, with a
// margin for two shared, noisy cores (a file of its own: a fresh process, no
// heap left by another test). The bench (`npm run bench`, section 18b)
// reports the same figure against plain BullMQ, a bare-timer floor and the
// 20 ms target.

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length, Math.max(1, Math.ceil(p * sorted.length))) - 1]!
}

describe.skipIf(!available)('jobs running at their deadline, measured', () => {
  const redis = useRedisQueues()
  let slow: SlowServer | undefined
  afterEach(async () => {
    await slow?.stop()
    slow = undefined
  })

  it('jobs still running at their deadline have their outbound calls aborted at the deadline: the upstream sees each connection close', async () => {
    const JOBS = 20
    slow = await startSlowServer()
    const { queue, name } = await redis.queue()
    const fetch = createFetch()
    // When this process saw each of its sockets close: with the upstream's
    // own times, a late close says which side held it (the abort not
    // reaching the socket here, or the upstream's process kept from running).
    const socketClosedAt: number[] = []
    const onConnected = (message: unknown) => {
      const { socket } = message as { socket: Socket }
      socket.once('close', () => socketClosedAt.push(performance.now()))
    }
    subscribe('undici:client:connected', onConnected)
    onTestFinished(() => {
      unsubscribe('undici:client:connected', onConnected)
    })
    const rejectedAt = new Map<string, number>()
    // When each job's fetch started, to set beside when its request arrived.
    const sentAt = new Map<string, number>()
    const url = slow.url
    const processor = withDeadline(async (job) => {
      sentAt.set(job.id!, performance.now())
      try {
        await fetch(`${url}?job=${job.id}`)
      } catch (error) {
        rejectedAt.set(job.id!, performance.now())
        throw error
      }
    })
    // Every job runs at once and their deadlines fall within a few ms of each
    // other: the worst case for the event loop, which must abort them all.
    const worker = redis.worker(name, processor, { concurrency: JOBS })
    await worker.waitUntilReady()
    // One job through the whole path first: the first error of a process
    // loads source maps under vitest, which is not what is measured here.
    const warm = settled(worker, 1)
    await addWithDeadline(queue, 'warm-up', {}, { deadline: Deadline.after(200) })
    await warm
    rejectedAt.clear()
    const drained = settled(worker, JOBS)

    // The deadline as the producer set it: the truth each abort is measured against.
    const expiresAt = new Map<string, number>()
    await Promise.all(
      Array.from({ length: JOBS }, async () => {
        // 1 s: the warm-up shows the whole path (add, pick up, fetch, arrive
        // upstream) fits in its 200 ms, so every job is running its call well
        // before this deadline; what is measured is the time after it.
        const deadline = Deadline.after(1_000)
        const job = await addWithDeadline(queue, 'call', {}, { deadline })
        expiresAt.set(job.id!, deadline.expiresAt)
      }),
    )
    await drained
    const closedBeforeClose = [...socketClosedAt]
    await fetch.close()
    const { arrived, closed, stalls } = await slow.report()

    // The server's times are on the host's monotonic clock (see
    // slowServer.mjs: not on performance.timeOrigin, a wall-clock reading per
    // process); this process's performance.now() is the same clock from
    // another zero, read here back to back.
    const toMonotonic = monotonicMs() - performance.now()
    const clientSide = [...expiresAt].map(([id, at]) => rejectedAt.get(id)! - at)
    const serverSide = [...expiresAt].map(([id, at]) => closed[id]! - (toMonotonic + at))
    // How late the upstream saw each request arrive, on the same offset: a
    // step between the two clocks' readings shifts arrivals as much as
    // closes; an upstream stalled after the deadline leaves arrivals alone.
    const arrivals = [...expiresAt.keys()].map(
      (id) => arrived[id]! - (toMonotonic + sentAt.get(id)!),
    )
    const line = (label: string, values: number[]) =>
      `${label}: p50 ${percentile(values, 0.5).toFixed(1)} ms, p99 ${percentile(values, 0.99).toFixed(1)} ms, max ${Math.max(...values).toFixed(1)} ms, min ${Math.min(...values).toFixed(1)} ms`
    console.log(
      `[bullmq] ${JOBS} jobs running at their 1 s deadline, one never-answered call each; time from the deadline to\n` +
        `  ${line('the call rejecting in the job', clientSide)}\n` +
        `  ${line('the upstream seeing the connection close', serverSide)}`,
    )

    expect(Object.keys(arrived)).toHaveLength(JOBS + 1)
    expect(processor.counts.stopped).toBe(JOBS + 1)
    const failed = await queue.getFailed(0, -1)
    expect(failed).toHaveLength(JOBS + 1)
    expect(failed.every((job) => job.failedReason.startsWith('deadline_exceeded: '))).toBe(true)
    expect(serverSide.every(Number.isFinite)).toBe(true)
    // The target is 20 ms (the bench reports against it); a generous margin for shared cores here.
    const firstDeadline = Math.min(...expiresAt.values())
    // Which side held a late close: this process (its sockets closed late
    // here too, its calls rejected late) or the upstream's, unscheduled on a
    // loaded host (its event loop stalled after the deadline).
    const upstreamStalls = stalls
      .filter(({ from, ms }) => from + ms > toMonotonic + firstDeadline)
      .map(
        ({ from, ms }) =>
          `${ms.toFixed(0)} ms from ${(from - toMonotonic - firstDeadline).toFixed(0)} ms`,
      )
    expect(
      Math.max(...serverSide),
      `${line('the upstream seeing the connection close', serverSide)}; ${line('the call rejecting in the job', clientSide)}; sockets closed here before fetch.close(): ${closedBeforeClose.length} (the last ${(Math.max(...closedBeforeClose) - firstDeadline).toFixed(1)} ms after the first deadline); the upstream's event loop stalled after the first deadline: ${upstreamStalls.join(', ') || 'never over 20 ms'}; ${line('the upstream seeing each request arrive after this process sent it', arrivals)}`,
    ).toBeLessThan(100)
    // Early only by what the worker's copy of the deadline is conservative by:
    // the round trip of its Redis TIME read (longer on a loaded box: it queues
    // behind BullMQ's own commands on the connection).
    expect(Math.min(...clientSide)).toBeGreaterThan(-50)
  }, 30_000)
})
