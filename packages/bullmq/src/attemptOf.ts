import type { Job } from 'bullmq'

/**
 * Which attempt of `job` a worker is making, 1 for the first: how many times
 * a worker has taken it (BullMQ's `attemptsStarted`, this take counted). Not
 * `attemptsMade + 1`: BullMQ counts a failed attempt there, and a run that
 * stalled (its worker lost the lock, the stall check put the job back) or
 * that moved its own job to delayed (`DelayedError`) is none — the next run
 * said `attempt: 1` again, two spans of one job under one number. Never less
 * than `attemptsMade + 1`: a `job.retry()` told to reset `attemptsStarted`
 * only, or a job object that lacks it, still counts its failures.
 */
export function attemptOf(job: Job): number {
  const started = job.attemptsStarted
  const failed = job.attemptsMade + 1
  return typeof started === 'number' && started > failed ? started : failed
}
