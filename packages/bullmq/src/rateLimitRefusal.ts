import type { Deadline } from '@hourglass/core'
import type { Job } from 'bullmq'
import { type DelayGuardDetails, describeResume } from './guardDelay.js'
import { JobDeadlineExceededError } from './JobDeadlineExceededError.js'
import { scriptClientOf } from './redisTime.js'

/** The parts of a job used here: its backend's rate-limit reading, and its worker's limiter. */
interface RateLimitedJob {
  backend?: { getRateLimitTtl?: (maxJobs?: number) => Promise<unknown> }
  queue?: { opts?: { limiter?: { max?: unknown } } }
}

/**
 * For an attempt that threw BullMQ's `RateLimitError` (a manual rate limit:
 * `worker.rateLimit(ms)` or `queue.rateLimit(ms)`, then
 * `throw Worker.RateLimitError()`): the `retry`-stage
 * `JobDeadlineExceededError` enforcement fails it with when the limit would
 * leave the job less than `minBudgetMs`, else undefined. BullMQ puts such a
 * job back in wait, and it waited out the limit only to be failed unrun as
 * one that "reached a worker after its deadline" — the same loss a refused
 * `moveToDelayed` prevents (guardDelay.ts).
 *
 * A limit of 0 ms is judged as any other: a job already left with less than
 * `minBudgetMs` would be failed unrun by the next worker all the same. One
 * whose length cannot be read (no Redis-backed queue, Redis silent until the
 * deadline ends) is judged as 0 ms, the least it can be: refused only when
 * even no limit would leave too little.
 */
export async function rateLimitRefusal(
  job: Job,
  error: unknown,
  deadline: Deadline,
  details: DelayGuardDetails,
): Promise<JobDeadlineExceededError | undefined> {
  const read = await untilDeadline(rateLimitTtlMs(job), deadline)
  const limitMs = read ?? 0
  const left = deadline.remaining() - limitMs
  if (left > 0 && left >= details.minBudgetMs) return undefined
  const limited =
    read === undefined ? 'rate limited for a time not read' : `rate limited for ${limitMs} ms`
  return new JobDeadlineExceededError({
    stage: 'retry',
    jobId: job.id ?? '',
    queue: job.queueName,
    budgetMs: details.budgetMs,
    elapsedMs: details.budgetMs - deadline.remaining(),
    budgetRecorded: details.budgetRecorded,
    retryDelayMs: limitMs,
    cause: new Error(
      `${limited}: the job would resume ${describeResume(left, details.minBudgetMs)}; it was not moved back to wait`,
      { cause: error },
    ),
  })
}

/**
 * The reading, or undefined once the attempt's deadline has passed first:
 * with Redis unreachable BullMQ's client queues the command for as long as
 * Redis stays away (workers run with `maxRetriesPerRequest: null`), and the
 * attempt's catch waited with it. Its time, on its clock, not its abort: a
 * cancel (BullMQ's signal) says nothing of Redis, and an observe-only expiry
 * aborts nothing.
 */
function untilDeadline<T>(reading: Promise<T>, deadline: Deadline): Promise<T | undefined> {
  return new Promise<T | undefined>((resolve) => {
    const { clock } = deadline
    const timer = clock.setTimeout(() => resolve(undefined), Math.max(0, deadline.remaining()))
    reading.then(
      (value) => {
        clock.clearTimeout(timer)
        resolve(value)
      },
      () => {
        clock.clearTimeout(timer)
        resolve(undefined)
      },
    )
  })
}

/**
 * How long from now no worker takes a job from the job's queue because of a
 * rate limit, in ms (0: not limited), by the rule BullMQ's moveToActive
 * applies: the queue-wide max (`queue.setGlobalRateLimit`, the `max` of the
 * queue's meta hash) if set, else the worker's `limiter.max`, else no limit
 * at all — with neither, no worker checks the limiter key, and a limit set by
 * `worker.rateLimit` holds back only the worker that set it (BullMQ's own
 * `limitUntil`), not the job. The length itself is BullMQ's answer
 * (`getRateLimitTtl`, which reads the meta `max` when given none), not a
 * second reading of its keys here. Undefined when it cannot be asked or
 * gives no number.
 */
async function rateLimitTtlMs(job: Job): Promise<number | undefined> {
  const { backend, queue } = job as unknown as RateLimitedJob
  if (typeof backend?.getRateLimitTtl !== 'function') return undefined
  try {
    const queueMax = await readQueueMax(job)
    const workerMax = queue?.opts?.limiter?.max
    let ttl: unknown
    if (queueMax) ttl = await backend.getRateLimitTtl()
    else if (typeof workerMax === 'number') ttl = await backend.getRateLimitTtl(workerMax)
    else return 0
    const ms = Number(ttl)
    if (Number.isNaN(ms)) return undefined
    return Math.max(ms, 0)
  } catch {
    return undefined
  }
}

const COMMAND = 'hourglassQueueRateLimitMax'
const LUA = "return redis.call('HGET', KEYS[1], 'max')"
const defined = new WeakSet<object>()

/** Whether the queue has a queue-wide rate limit (`setGlobalRateLimit`): its meta `max`, as moveToActive reads it. */
async function readQueueMax(job: Job): Promise<boolean> {
  const client = await scriptClientOf((job as unknown as { backend: unknown }).backend)
  if (!defined.has(client)) {
    client.defineCommand(COMMAND, { numberOfKeys: 1, lua: LUA })
    defined.add(client)
  }
  const max = await client.runCommand(COMMAND, [`${job.queueQualifiedName}:meta`])
  // A missing field is nil, which Lua hands back as false, then null.
  return max !== null && max !== undefined && max !== false
}
