import { HourglassError } from '@hourglass/core'

const MARKER = Symbol.for('@hourglass/bullmq.JobLockLostError')

/**
 * How a worker came to hold a running job's lock no more:
 * - `renewal_failed`: its renewal failed (`lockRenewalFailed`);
 * - `worker_closed`: the worker closed while the attempt ran
 *   (`worker.close(true)` does not wait for running jobs): it renews no
 *   lock and can record nothing of the attempt.
 */
export type JobLockLostWhy = 'renewal_failed' | 'worker_closed'

/**
 * The worker lost a running job's lock (its renewal failed: the lock
 * expired while the event loop or the Redis link stalled, or another hand
 * removed it; or the worker was closed with force under the attempt):
 * BullMQ may already have handed the job to another worker, or will once
 * the lock expires, so this attempt is stopped — its deadline cancelled
 * with this error, its signal aborted — rather than left to run the job
 * twice. `code` `JOB_LOCK_LOST`; `why` says which. BullMQ cannot record
 * this attempt's end (the lock is gone), so the error is seen by the
 * attempt's own code and on `hourglass:bullmq:end` (outcome `lock_lost`),
 * not as a `failedReason`.
 */
export class JobLockLostError extends HourglassError {
  static override readonly errorName: string = 'JobLockLostError'
  static readonly code = 'JOB_LOCK_LOST'
  readonly jobId: string
  readonly queue: string
  readonly why: JobLockLostWhy

  constructor(details: { jobId: string; queue: string; why?: JobLockLostWhy | undefined }) {
    const why = details.why ?? 'renewal_failed'
    super(
      JobLockLostError.code,
      why === 'worker_closed'
        ? `job ${details.jobId} of ${details.queue} was running when its worker closed (worker.close(true) does not wait for running jobs): its lock is no longer renewed and nothing this attempt does can be recorded; this attempt was stopped, another worker may run the job`
        : `job ${details.jobId} of ${details.queue} lost its lock (renewal failed); this attempt was stopped, another worker may run the job`,
    )
    this.jobId = details.jobId
    this.queue = details.queue
    this.why = why
    Object.defineProperty(this, MARKER, { value: true })
  }
}

/** True for the error a running attempt is stopped with when its worker lost the job's lock (any installed copy). */
export function isJobLockLost(error: unknown): error is JobLockLostError {
  if (typeof error !== 'object' || error === null) return false
  try {
    return (error as Record<symbol, unknown>)[MARKER] === true
  } catch {
    return false
  }
}
