import { HourglassError } from '@hourglass/core'

const MARKER = Symbol.for('@hourglass/bullmq.JobLockLostError')

/**
 * The worker lost a running job's lock (its renewal failed: the lock
 * expired while the event loop or the Redis link stalled, or another hand
 * removed it): BullMQ may already have handed the job to another worker, so
 * this attempt is stopped — its deadline cancelled with this error, its
 * signal aborted — rather than left to run the job twice. `code`
 * `JOB_LOCK_LOST`. BullMQ cannot record this attempt's end (the lock is
 * gone), so the error is seen by the attempt's own code and on
 * `hourglass:bullmq:end` (outcome `lock_lost`), not as a `failedReason`.
 */
export class JobLockLostError extends HourglassError {
  static readonly code = 'JOB_LOCK_LOST'
  readonly jobId: string
  readonly queue: string

  constructor(details: { jobId: string; queue: string }) {
    super(
      JobLockLostError.code,
      `job ${details.jobId} of ${details.queue} lost its lock (renewal failed); this attempt was stopped, another worker may run the job`,
    )
    this.jobId = details.jobId
    this.queue = details.queue
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
