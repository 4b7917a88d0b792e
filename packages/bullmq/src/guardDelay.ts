import type { Deadline } from '@hourglass/core'
import type { Job } from 'bullmq'
import { JobDeadlineExceededError } from './JobDeadlineExceededError.js'

/** The refusals `guardDelay` made (told from a processor's look-alike by identity). */
const refusals = new WeakSet<object>()

/** What the refusal's message measures against (withDeadline's view of the job). */
export interface DelayGuardDetails {
  budgetMs: number
  budgetRecorded: boolean
  minBudgetMs: number
}

/**
 * For one attempt, `job.moveToDelayed(timestamp, token)` refuses a delay
 * after which the job could never run: it throws the `retry`-stage
 * `JobDeadlineExceededError` and leaves the job where it is (active, so the
 * attempt's failure fails it). Passed on, the job sat in `delayed` for the
 * whole delay — a poll "try again in an hour" under a 30 s deadline — and
 * was then failed unrun as one that "reached a worker after its deadline",
 * which blamed the queue for the processor's own step. addWithDeadline
 * refuses such a `delay` for the same reason. Returns the undo.
 */
export function guardDelay(job: Job, deadline: Deadline, details: DelayGuardDetails): () => void {
  const hadOwn = Object.hasOwn(job, 'moveToDelayed')
  const original = job.moveToDelayed
  job.moveToDelayed = function moveToDelayed(this: Job, timestamp: number, token?: string) {
    // BullMQ's own arithmetic (Job.moveToDelayed): the target on this host's wall clock.
    const delayMs = Math.max(0, timestamp - Date.now())
    const left = deadline.remaining() - delayMs
    // NaN (a timestamp that is no number) is left for BullMQ to handle as it does.
    if (left <= 0 || left < details.minBudgetMs) {
      const remaining = deadline.remaining()
      const error = new JobDeadlineExceededError({
        stage: 'retry',
        jobId: job.id ?? '',
        queue: job.queueName,
        budgetMs: details.budgetMs,
        elapsedMs: details.budgetMs - remaining,
        budgetRecorded: details.budgetRecorded,
        retryDelayMs: delayMs,
        cause: new Error(
          `moveToDelayed(${timestamp}) would resume the job after its deadline; it was not moved`,
        ),
      })
      refusals.add(error)
      return Promise.reject(error)
    }
    return original.call(this, timestamp, token)
  }
  return () => {
    if (hadOwn) job.moveToDelayed = original
    else delete (job as { moveToDelayed?: unknown }).moveToDelayed
  }
}

/** The error is a `guardDelay` refusal. */
export function isDelayRefusal(error: unknown): boolean {
  return typeof error === 'object' && error !== null && refusals.has(error)
}
