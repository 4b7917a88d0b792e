import type { Job } from 'bullmq'

/** What BullMQ will do with a failed attempt. */
export interface NextAttempt {
  retry: boolean
  /** Its back-off before the next attempt, in ms (0: straight back to the queue). */
  delayMs: number
}

const DEFERRED = new Set(['DelayedError', 'WaitingError', 'WaitingChildrenError', 'RateLimitError'])

/**
 * The errors a processor throws to move its own job (to delayed, to waiting
 * for children, back under a rate limit): BullMQ's control flow, not failures.
 * BullMQ tells them by name too, so this works across installed copies.
 */
export function isDeferral(error: unknown): boolean {
  if (!(error instanceof Error)) return false
  return DEFERRED.has(error.name) || error.message === 'bullmq:rateLimitExceeded'
}

/**
 * A `DelayedError`: the processor says it has moved its job to delayed
 * itself (`job.moveToDelayed`), and BullMQ leaves the job where it is.
 */
export function isDelayedError(error: unknown): boolean {
  return error instanceof Error && error.name === 'DelayedError'
}

/**
 * Ask BullMQ itself whether, and after what back-off, it will retry this
 * failure: the same decision (attempts, `UnrecoverableError`,
 * `maxStartedAttempts`, the job's backoff, the worker's custom strategy) it
 * makes a moment later. A second implementation of that rule would drift
 * from BullMQ's. `shouldRetryJob` is not public API: when a BullMQ version
 * lacks it the answer is "no retry known", and the start check still keeps a
 * late attempt from running. A jittered back-off is drawn twice (here and by
 * BullMQ); both draws stay under the nominal delay, and an attempt that
 * misses its deadline is caught by the start check.
 */
export async function nextAttempt(job: Job, error: unknown): Promise<NextAttempt> {
  const ask = (job as unknown as { shouldRetryJob?: (error: unknown) => Promise<unknown> })
    .shouldRetryJob
  if (typeof ask !== 'function') return { retry: false, delayMs: 0 }
  let answer: unknown
  try {
    answer = await ask.call(job, error)
  } catch {
    // BullMQ's own moveToFailed meets the same error (an unknown backoff strategy) and reports it.
    return { retry: false, delayMs: 0 }
  }
  const [retry, delay] = Array.isArray(answer) ? answer : []
  return { retry: retry === true, delayMs: typeof delay === 'number' && delay > 0 ? delay : 0 }
}
