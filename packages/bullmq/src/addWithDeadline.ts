import { currentDeadline, type Deadline, untilEnded } from '@hourglass/core'
import type { Job, JobsOptions } from 'bullmq'
import { bullmqChannels } from './channels.js'
import { readRedisTime, scriptClientOf, toRedisMs } from './redisTime.js'
import { DEADLINE_OPTION, type StoredDeadline } from './storedDeadline.js'

export interface AddWithDeadlineOptions extends JobsOptions {
  /**
   * The deadline the job must be done by. Default: `currentDeadline()`. With
   * neither (or `Deadline.never()`), the job is added without one and runs as
   * any BullMQ job; a `Deadline.never()` that was cancelled is refused like
   * any deadline that has ended.
   */
  deadline?: Deadline | undefined
}

/** The part of a BullMQ `Queue` used here. */
export interface QueueLike<DataType, ResultType, NameType extends string> {
  readonly name: string
  readonly qualifiedName: string
  readonly backend: unknown
  add(
    name: NameType,
    data: DataType,
    opts?: JobsOptions,
  ): Promise<Job<DataType, ResultType, NameType>>
}

/**
 * `queue.add(name, data, opts)`, with the deadline stored in the job
 * (`job.opts.hourglass`) as a time on the Redis server's clock, so that no
 * host's clock — the producer's or a worker's — can lengthen it.
 *
 * A deadline that has already ended is not enqueued: its reason is thrown
 * (`DeadlineExceededError`, or the cancel reason), as `createFetch` does
 * before it touches a socket. An observe-only deadline (dark mode) is stored
 * as such and never refuses anything.
 */
export async function addWithDeadline<DataType, ResultType, NameType extends string>(
  queue: QueueLike<DataType, ResultType, NameType>,
  name: NameType,
  data: DataType,
  options: AddWithDeadlineOptions = {},
): Promise<Job<DataType, ResultType, NameType>> {
  const { deadline = currentDeadline(), ...opts } = options
  if (!deadline) return queue.add(name, data, opts)
  // Before the no-expiry shortcut: a cancelled Deadline.never() (the caller
  // left) has ended too, and its job must not be enqueued either.
  if (!deadline.observe) deadline.throwIfExpired()
  if (!Number.isFinite(deadline.expiresAt)) return queue.add(name, data, opts)

  const key = `${queue.qualifiedName}:meta`
  // Bounded by the deadline: a Redis that does not answer (paused, or down
  // behind a client that queues commands) must not hold the producer past it.
  // Getting the client is inside the bound too: a queue that has not reached
  // Redis yet (down when the service started) waits for it to connect.
  const sample = await untilEnded(
    scriptClientOf(queue.backend).then((client) => readRedisTime(client, key, deadline.clock)),
    { deadline },
  )
  if (!deadline.observe) deadline.throwIfExpired()
  const budgetMs = Math.floor(deadline.remaining())
  const stored: StoredDeadline = {
    expiresAtMs: toRedisMs(deadline.expiresAt, sample),
    budgetMs,
  }
  if (deadline.observe) stored.observe = true
  if (bullmqChannels.enqueue.hasSubscribers) {
    // Where a tracer leaves its context for the worker: stored only if one did.
    const trace: Record<string, string> = {}
    bullmqChannels.enqueue.publish(() => ({ queue: queue.name, name, deadline, budgetMs, trace }))
    if (Object.keys(trace).length > 0) stored.trace = trace
  }
  const job = await queue.add(name, data, { ...opts, [DEADLINE_OPTION]: stored } as JobsOptions)

  bullmqChannels.add.publish(() => ({
    jobId: job.id ?? '',
    queue: queue.name,
    name,
    budgetMs,
    remainingMs: Math.max(0, Math.floor(deadline.remaining())),
    expiresAtMs: stored.expiresAtMs,
    clockErrorMs: sample.receivedAt - sample.sentAt,
    observe: deadline.observe,
    ...(stored.trace ? { trace: stored.trace } : {}),
  }))
  return job
}
