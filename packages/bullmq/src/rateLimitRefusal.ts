import type { Deadline } from '@hourglass/core'
import type { Job } from 'bullmq'
import { type DelayGuardDetails, describeResume } from './guardDelay.js'
import { JobDeadlineExceededError } from './JobDeadlineExceededError.js'

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
 * Undefined too when the limit's length cannot be read: the rate limit is
 * then BullMQ's alone, as before.
 */
export async function rateLimitRefusal(
  job: Job,
  error: unknown,
  deadline: Deadline,
  details: DelayGuardDetails,
): Promise<JobDeadlineExceededError | undefined> {
  const limitMs = await rateLimitTtlMs(job)
  if (limitMs === undefined || limitMs === 0) return undefined
  const left = deadline.remaining() - limitMs
  if (left > 0 && left >= details.minBudgetMs) return undefined
  return new JobDeadlineExceededError({
    stage: 'retry',
    jobId: job.id ?? '',
    queue: job.queueName,
    budgetMs: details.budgetMs,
    elapsedMs: details.budgetMs - deadline.remaining(),
    budgetRecorded: details.budgetRecorded,
    retryDelayMs: limitMs,
    cause: new Error(
      `rate limited for ${limitMs} ms: the job would resume ${describeResume(left, details.minBudgetMs)}; it was not moved back to wait`,
      { cause: error },
    ),
  })
}

/**
 * How long from now no worker takes a job from the job's queue because of a
 * rate limit, in ms (0: not limited), as BullMQ itself answers it: its
 * backend's `getRateLimitTtl` (what `queue.getRateLimitTtl(max)` asks),
 * given the `limiter.max` of the worker that took the job, as every worker
 * with that limiter checks before it takes a job. A limit set by
 * `worker.rateLimit` or `queue.rateLimit` counts at once; a limiter window
 * still under its `max` does not (another worker may take the job now).
 * Asked of BullMQ rather than read from its keys here: a second reading of
 * BullMQ's rule would drift from it. Undefined when it cannot be asked or
 * gives no number.
 */
async function rateLimitTtlMs(job: Job): Promise<number | undefined> {
  const { backend, queue } = job as unknown as RateLimitedJob
  if (typeof backend?.getRateLimitTtl !== 'function') return undefined
  const max = queue?.opts?.limiter?.max
  try {
    const ttl = Number(await backend.getRateLimitTtl(typeof max === 'number' ? max : undefined))
    if (Number.isNaN(ttl)) return undefined
    return Math.max(ttl, 0)
  } catch {
    return undefined
  }
}
