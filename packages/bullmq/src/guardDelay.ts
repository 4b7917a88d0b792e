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
  /** How late a delayed job may reach a worker after its delay ends (withDeadline's `delayLagMs`; default 0). */
  delayLagMs?: number | undefined
}

/** One attempt's guard on `job.moveToDelayed`. */
export interface DelayGuard {
  /**
   * The last move it refused — under an observe-only deadline, the last one
   * it would have refused (and let through) — unless a move has moved the
   * job, before the refusal or since (a `moveToDelayed` it accepted, a
   * `moveToWait`, a `moveToWaitingChildren` that moved it): the job is then
   * where that move put it.
   */
  readonly refusal: JobDeadlineExceededError | undefined
  /** Put the job's own `moveToDelayed`, `moveToWait` and `moveToWaitingChildren` back. */
  undo(): void
}

/**
 * For one attempt, `job.moveToDelayed(timestamp, token)` refuses a delay
 * after which the job could never run: it rejects with the `retry`-stage
 * `JobDeadlineExceededError` and leaves the job where it is (active, so the
 * attempt's failure fails it). Passed on, the job sat in `delayed` for the
 * whole delay — a poll "try again in an hour" under a 30 s deadline — and
 * was then failed unrun as one that "reached a worker after its deadline",
 * which blamed the queue for the processor's own step. addWithDeadline
 * refuses such a `delay` for the same reason.
 *
 * The job's other moves (`moveToWait`, `moveToWaitingChildren`) are watched,
 * not judged: one that moves the job means a refusal before it no longer
 * says where the job is.
 *
 * Under an observe-only deadline (dark mode) every move is made as asked,
 * and the guard only records the one it would have refused, so the end
 * message can say what enforcement would have made of the attempt.
 */
export function guardDelay(job: Job, deadline: Deadline, details: DelayGuardDetails): DelayGuard {
  let refusal: JobDeadlineExceededError | undefined
  // Moves that may have taken the job out of active: started, and neither
  // failed (a lost lock) nor moved nothing (`moveToWaitingChildren` with no
  // child pending resolves false). While there is one, no refusal — before it
  // or after it — says where the job is: it is where that move put it, and a
  // later refusal failing the attempt reported a job in waiting-children
  // (that completed later) as dropped. Counted from the start of the move,
  // not its end, or a move not awaited left the attempt judged by the
  // refusal. The refused move itself still rejects to its caller.
  let moves = 0
  const moving = <T>(move: T, movedNothing?: (result: Awaited<T>) => boolean): T => {
    moves++
    const undone = () => {
      moves--
    }
    Promise.resolve(move).then((result) => {
      if (movedNothing?.(result)) undone()
    }, undone)
    return move
  }
  const undo = [
    patch(
      job,
      'moveToDelayed',
      (original) =>
        // A promise in every case, as BullMQ's async method gives: a timestamp
        // its arithmetic throws on (a BigInt, a Symbol, a valueOf that throws)
        // rejects the call rather than throwing out of it — a processor that
        // chains `.catch()` on it caught nothing.
        function moveToDelayed(this: Job, timestamp: number, token?: string) {
          try {
            // Read once, and BullMQ handed the number read: given the
            // timestamp itself it read it again, and a Date-like value whose
            // valueOf changed between reads was checked at one time and moved
            // to another (past the deadline). Unary plus is the conversion
            // BullMQ's `timestamp - now` makes, and throws where it throws.
            const at = +timestamp
            // BullMQ's own arithmetic (Job.moveToDelayed): the target on this
            // host's wall clock, a delay that is no number (NaN) read as none.
            const delay = at - Date.now()
            // biome-ignore lint/complexity/useMathMinMax: Math.max keeps NaN; BullMQ's ternary reads it as 0
            const delayMs = delay > 0 ? delay : 0
            // What it has when its delay ends; a worker takes it up to
            // delayLagMs later (BullMQ's promotion, on Redis's timer).
            const left = deadline.remaining() - delayMs
            const taken = left - (delayMs > 0 ? (details.delayLagMs ?? 0) : 0)
            if (taken <= 0 || taken < details.minBudgetMs) {
              const error = refusalOf(job, at, delayMs, left, deadline, details)
              refusal = error
              if (!deadline.observe) {
                refusals.add(error)
                const refused = Promise.reject(error)
                // The refusal fails the attempt anyway (withDeadline reads
                // `refusal`): a processor that did not await the move must not
                // crash the worker with an unhandled rejection. One that awaits
                // it still gets the error.
                refused.catch(noop)
                return refused
              }
              // Dark mode: moved as asked. This move is the one recorded, so it
              // does not clear the refusal as an accepted move does.
              return original.call(this, at, token)
            }
            return moving(original.call(this, at, token))
          } catch (error) {
            return Promise.reject(error)
          }
        },
    ),
    patch(
      job,
      'moveToWait',
      (original) =>
        function moveToWait(this: Job, ...args: Parameters<Job['moveToWait']>) {
          return moving(original.apply(this, args))
        },
    ),
    patch(
      job,
      'moveToWaitingChildren',
      (original) =>
        function moveToWaitingChildren(
          this: Job,
          ...args: Parameters<Job['moveToWaitingChildren']>
        ) {
          return moving(original.apply(this, args), (moved) => moved !== true)
        },
    ),
  ]
  return {
    get refusal() {
      return moves > 0 ? undefined : refusal
    },
    undo() {
      for (const put of undo) put()
    },
  }
}

/** Replace one of the job's methods for the attempt; returns what puts it back. */
function patch<K extends 'moveToDelayed' | 'moveToWait' | 'moveToWaitingChildren'>(
  job: Job,
  key: K,
  replace: (original: Job[K]) => Job[K],
): () => void {
  const hadOwn = Object.hasOwn(job, key)
  const original = job[key]
  job[key] = replace(original)
  return () => {
    if (hadOwn) job[key] = original
    else delete (job as Partial<Job>)[key]
  }
}

function noop(): void {}

/** The error is a `guardDelay` refusal. */
export function isDelayRefusal(error: unknown): boolean {
  return typeof error === 'object' && error !== null && refusals.has(error)
}

function refusalOf(
  job: Job,
  timestamp: number,
  delayMs: number,
  left: number,
  deadline: Deadline,
  details: DelayGuardDetails,
): JobDeadlineExceededError {
  const remaining = deadline.remaining()
  const when = describeResume(left, details)
  const moved = deadline.observe ? 'moved as asked (observe-only deadline)' : 'it was not moved'
  return new JobDeadlineExceededError({
    stage: 'retry',
    jobId: job.id ?? '',
    queue: job.queueName,
    budgetMs: details.budgetMs,
    elapsedMs: details.budgetMs - remaining,
    budgetRecorded: details.budgetRecorded,
    retryDelayMs: delayMs,
    cause: new Error(`moveToDelayed(${timestamp}) would resume the job ${when}; ${moved}`),
  })
}

/**
 * When a job resumed with `leftMs` would start, in a refusal's words: past
 * the deadline, or before it with less than a worker starts a job with. The
 * second is no "after its deadline", and said so it sent readers looking for
 * a clock that ran late.
 */
function describeResume(
  leftMs: number,
  { minBudgetMs, delayLagMs = 0 }: DelayGuardDetails,
): string {
  if (leftMs <= 0) return `${Math.ceil(-leftMs)} ms after its deadline`
  const left = `with ${Math.floor(leftMs)} ms left`
  // Refused for the lag alone: said so, or the numbers did not add up.
  return leftMs < minBudgetMs
    ? `${left}, less than minBudgetMs (${minBudgetMs})`
    : `${left}, and a worker may take it up to delayLagMs (${delayLagMs}) later: less than minBudgetMs (${minBudgetMs}) by then`
}
