import { DeadlineExceededError, isDeadlineExceeded, isError, messageOf } from '@hourglass/core'

/**
 * Where a job was when its deadline ended it:
 * - `queued`: it reached a worker too late (waiting, delayed, or back from a stall), or with less
 *   than the worker's `minBudgetMs` left, and never ran;
 * - `running`: the deadline ended the attempt that was running;
 * - `retry`: an attempt failed and the next one would not start before the deadline.
 */
export type JobDeadlineStage = 'queued' | 'running' | 'retry'

export interface JobDeadlineExceededDetails {
  stage: JobDeadlineStage
  jobId: string
  queue: string
  /**
   * The time the job was given when it was added, in ms — or, when it
   * recorded none (`budgetRecorded: false`), the time it had left when the
   * worker took it (never negative).
   */
  budgetMs: number
  /** How much of it had passed, in ms. */
  elapsedMs: number
  /**
   * False when the job recorded no budget (another producer, or a hand, wrote
   * its deadline): the message then says so instead of what it was added
   * with. Default true.
   */
  budgetRecorded?: boolean | undefined
  /** What the failed attempt threw (stages `running` and `retry`). */
  cause?: unknown
  /** The back-off BullMQ would have waited before the next attempt, in ms (stage `retry`). */
  retryDelayMs?: number
  /** It has stalled at some point, on this attempt's way or an earlier one's (stage `queued`; see `BullmqExpireMessage.stalled`). */
  stalled?: boolean
}

const MARKER = Symbol.for('@hourglass/bullmq.JobDeadlineExceededError')

/**
 * A job's deadline ended it: the error its worker fails it with. BullMQ
 * records the message as the job's `failedReason`, which starts with
 * `deadline_exceeded`. `code` is `DEADLINE_EXCEEDED`, so core's
 * `isDeadlineExceeded()` is true for it as for every other deadline error.
 *
 * Its `name` is `UnrecoverableError`: that is how BullMQ recognises an error
 * it must not retry (it checks the name as well as the class, so this holds
 * with two installed copies of bullmq), and no retry can help a job whose
 * time is up.
 */
export class JobDeadlineExceededError extends DeadlineExceededError {
  static override readonly errorName: string = 'JobDeadlineExceededError'
  readonly stage: JobDeadlineStage
  readonly jobId: string
  readonly queue: string
  /** False when the job recorded no budget: `budgetMs` is then what it had left when the worker took it. */
  readonly budgetRecorded: boolean

  constructor(details: JobDeadlineExceededDetails) {
    super({ budgetMs: details.budgetMs, elapsedMs: details.elapsedMs, cause: details.cause })
    this.stage = details.stage
    this.jobId = details.jobId
    this.queue = details.queue
    this.budgetRecorded = details.budgetRecorded !== false
    this.message = `deadline_exceeded: ${describe(details, this.budgetMs, this.elapsedMs)}`
    this.name = 'UnrecoverableError'
    Object.defineProperty(this, MARKER, { value: true })
  }
}

function describe(d: JobDeadlineExceededDetails, budgetMs: number, elapsedMs: number): string {
  const job = `job ${d.jobId} of ${d.queue}`
  // A job that recorded no budget was not "added with 0 ms left": nobody knows what it was added with.
  const added = d.budgetRecorded === false ? 'no budget recorded' : `added with ${budgetMs} ms left`
  if (d.stage === 'queued') {
    const from = d.stalled ? ' (back from a stalled worker)' : ''
    // Refused by the worker's minBudgetMs before its deadline: it was not late.
    if (elapsedMs < budgetMs) {
      return `${job} reached a worker${from} with ${budgetMs - elapsedMs} ms left, too little to start (${added}); not run`
    }
    return `${job} reached a worker${from} ${elapsedMs - budgetMs} ms after its deadline (${added}); not run`
  }
  const cause = causeText(d.cause)
  if (d.stage === 'retry') {
    const left = Math.max(0, budgetMs - elapsedMs)
    const delay = Math.round(d.retryDelayMs ?? 0)
    return `${job} failed with ${left} ms left (${added}) and its next attempt, after ${delay} ms, would not fit; not retried${cause}`
  }
  return `${job} was stopped by its deadline (${added})${cause}`
}

/**
 * What the failed attempt threw, after a colon, when it is an Error. Never
 * throws: a processor rejects with anything, and an Error whose `message`
 * getter throws (or a revoked Proxy, on which `instanceof` throws) threw out
 * of this constructor — the job failed with that error instead of
 * `deadline_exceeded`, and BullMQ retried it.
 */
function causeText(cause: unknown): string {
  return isError(cause) ? `: ${messageOf(cause)}` : ''
}

/** True for the error a worker fails a job with when the job's deadline ended it (any installed copy). */
export function isJobDeadlineExceeded(error: unknown): error is JobDeadlineExceededError {
  return isDeadlineExceeded(error) && (error as unknown as Record<symbol, unknown>)[MARKER] === true
}
