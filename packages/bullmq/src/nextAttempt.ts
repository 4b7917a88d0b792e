import { fieldOf, isError } from '@hourglass/core'
import type { Job } from 'bullmq'
import { luaNumber } from './luaNumber.js'

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
  // Read without a throw: an Error whose `message` getter throws, or a
  // revoked Proxy (whose `instanceof` throws), threw out of here ahead of
  // the deadline's branch, and the job failed with that throw — retried by
  // BullMQ — where its deadline had stopped it.
  if (!isError(error)) return false
  const name = fieldOf(error, 'name')
  return (
    (typeof name === 'string' && DEFERRED.has(name)) ||
    fieldOf(error, 'message') === RATE_LIMIT_MESSAGE
  )
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
  // Read without a throw, as `isDeferral`.
  const name = isError(error) ? fieldOf(error, 'name') : undefined
  return typeof name === 'string' && OWN_MOVES.has(name)
}

/**
 * Ask BullMQ itself whether, and after what back-off, it will retry this
 * failure: the same decision (attempts, `UnrecoverableError`,
 * `maxStartedAttempts`, the job's backoff, the worker's custom strategy) it
 * makes a moment later. A second implementation of that rule would drift
 * from BullMQ's. `shouldRetryJob` is not public API: when a BullMQ version
 * lacks it the answer is "no retry known", and the start check still keeps a
 * late attempt from running.
 *
 * The answer is pinned on this attempt's job for this error: BullMQ's own
 * `moveToFailed` asks the job again, and got a second answer — a worker's
 * `backoffStrategy` ran twice per failure (its side effects twice), and a
 * back-off that differs from call to call (a jitter, a strategy's own draw)
 * was judged by one draw and applied by the other: a retry judged to fit
 * was parked past the deadline, and failed unrun a back-off later. BullMQ
 * now applies the answer judged (a rejection included, met by BullMQ as
 * before). A worker makes a job object per attempt, so nothing outlives it.
 */
export async function nextAttempt(job: Job, error: unknown): Promise<NextAttempt> {
  const asker = job as unknown as { shouldRetryJob?: (error: unknown) => Promise<unknown> }
  const ask = asker.shouldRetryJob
  if (typeof ask !== 'function') return { retry: false, delayMs: 0 }
  let asking: Promise<unknown>
  try {
    asking = Promise.resolve(ask.call(job, error))
  } catch (thrown) {
    asking = Promise.reject(thrown)
  }
  // For this failure only: a job processed by hand again (the same object, a
  // later attempt) that throws the same error is asked afresh.
  const made = job.attemptsMade
  asker.shouldRetryJob = function shouldRetryJob(this: unknown, asked: unknown) {
    return asked === error && job.attemptsMade === made ? asking : ask.call(this, asked)
  }
  let answer: unknown
  try {
    answer = await asking
  } catch {
    // BullMQ's own moveToFailed meets the same error (an unknown backoff strategy) and reports it.
    return { retry: false, delayMs: 0 }
  }
  const [retry, delay] = Array.isArray(answer) ? answer : []
  // Read as BullMQ's script reads it (`tonumber`): a numeric string — a
  // back-off from config or the environment, `{ type: 'fixed', delay:
  // '1500' }`, which BullMQ's fixed strategy returns as given, or a
  // strategy's — is that many ms there. Read as none, the retry was let
  // through, parked the whole back-off, and failed unrun past the deadline.
  const ms = luaNumber(delay)
  return { retry: retry === true, delayMs: typeof ms === 'number' && ms > 0 ? ms : 0 }
}
