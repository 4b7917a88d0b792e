import type { Job } from 'bullmq'

/** What BullMQ will do with a failed attempt. */
export interface NextAttempt {
  retry: boolean
  /** Its back-off before the next attempt, in ms (0: straight back to the queue). */
  delayMs: number
}

const DEFERRED = new Set(['DelayedError', 'WaitingError', 'WaitingChildrenError'])

/** The message by which BullMQ (Worker.handleFailed) tells a manual rate limit. */
const RATE_LIMIT_MESSAGE = 'bullmq:rateLimitExceeded'

/**
 * The errors a processor throws to move its own job (to delayed, to waiting
 * for children, back under a rate limit): BullMQ's control flow, not failures.
 * Told as BullMQ tells them, so this works across installed copies: the moves
 * by name, a rate limit by its message alone. An error merely named
 * `RateLimitError` (a processor's own, for an upstream's 429; BullMQ's given
 * another message) is a failure to BullMQ, which retries it: read as a
 * deferral, its retry past the deadline went unchecked.
 */
export function isDeferral(error: unknown): boolean {
  if (!(error instanceof Error)) return false
  return DEFERRED.has(error.name) || error.message === RATE_LIMIT_MESSAGE
}

/** The errors by which a processor says it has moved its own job itself. */
const OWN_MOVES = new Set(['DelayedError', 'WaitingError', 'WaitingChildrenError'])

/**
 * A `DelayedError`, `WaitingError` or `WaitingChildrenError`: the processor
 * says it has moved its job itself (`job.moveToDelayed`, `job.moveToWait`,
 * `job.moveToWaitingChildren`), and BullMQ leaves the job where it is — in
 * active, with no worker, if it did not. Not a rate limit: BullMQ moves
 * that job itself.
 */
export function isOwnMove(error: unknown): boolean {
  return error instanceof Error && OWN_MOVES.has(error.name)
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
