import {
  currentDeadline,
  type Deadline,
  describeValue,
  fieldOf,
  isDeadline,
  isDeadlineExceeded,
  isError,
  refuseUnknownOptions,
} from '@hourglass/core'
import { asOwnOrForeignExpiry } from './asOwnOrForeignExpiry.js'
import { JobDeadlineExceededError, type JobDeadlineStage } from './JobDeadlineExceededError.js'

/**
 * The message prefix of a job failed by its deadline: what the worker's
 * `JobDeadlineExceededError` says, and so the job's `failedReason`.
 */
const PREFIX = 'deadline_exceeded: '

/** A failedReason (or an error's message) is at most this long to be read: BullMQ stores any length. */
const MAX_REASON = 64 * 1024

// The forms JobDeadlineExceededError writes (see its `describe`), after
// `job <id> of <queue> `. An id may hold anything (a custom jobId), so the
// job part is not matched by a pattern (a lazy `(.+?) of (.+?)` takes time
// quadratic in a hostile reason's length): each place one of the forms
// begins is tried, and the queue is what follows the last ` of ` before it
// (a queue name cannot hold `:`, BullMQ refuses one). The forms themselves
// are matched from that place on (sticky), in time linear in the reason.
const ADDED = String.raw`\((?:added with (\d+) ms left|no budget recorded)\)`
const STALLED = String.raw`( \(back from a stalled worker\))?`
const FORMS = {
  late: new RegExp(
    String.raw`reached a worker${STALLED} (\d+) ms after its deadline ${ADDED}; not run$`,
    'y',
  ),
  early: new RegExp(
    String.raw`reached a worker${STALLED} with (\d+) ms left, too little to start ${ADDED}; not run$`,
    'y',
  ),
  // A retry's and a running attempt's reasons go on with the processor's error message.
  // The back-off is what a worker's backoffStrategy returned, written as
  // JavaScript writes a number: `Infinity`, or with an exponent from 1e21.
  retry: new RegExp(
    String.raw`failed with (\d+) ms left ${ADDED} and its next attempt, after (\d+|Infinity|\d(?:\.\d+)?e\+\d+) ms, would not fit; not retried(?:$|: )`,
    'y',
  ),
  running: new RegExp(`was stopped by its deadline ${ADDED}(?:$|: )`, 'y'),
}
const STARTS = [' reached a worker', ' failed with ', ' was stopped by its deadline ']
/** How many places each form may begin that are tried: an honest reason needs one. */
const MAX_TRIES = 16

/**
 * The Hourglass error behind a job failure seen by its producer: the twin of
 * `@hourglass/grpc`'s `fromGrpcError` for a BullMQ hop.
 *
 * `job.waitUntilFinished(queueEvents)` rejects with a plain `Error` whose
 * message is the job's `failedReason`: the worker's `JobDeadlineExceededError`
 * does not cross Redis, only its message does. Given that error (or any
 * error whose message is a failedReason the worker wrote for a deadline,
 * `deadline_exceeded: job … of …`), this returns a `JobDeadlineExceededError`
 * (`code` `DEADLINE_EXCEEDED`) read back from it: `stage`, `jobId`, `queue`,
 * `budgetMs`, `elapsedMs`, `budgetRecorded` as the worker had them, the same
 * message, and the error it was given as `cause`. So an Express handler can
 * write `next(fromJobError(error))` and `deadlineErrors()` answers 504, not
 * 500. A number the reason does not state (what a job that recorded no
 * budget was given, how long it ran) is `NaN`.
 *
 * It is the expiry of the deadline the caller waits under (`deadline`,
 * default `currentDeadline()`) only when that deadline has ended. While it
 * still has its time — the job had a cap of its own, or gave up a retry
 * whose back-off the request could not wait for, with most of the
 * request's time left — the error is marked (core's `markExpiryOf`) as an
 * unrelated deadline's: `deadlineErrors()` passes it on with `next(error)`,
 * as it does an app's own cap, instead of answering 504
 * `x-deadline-expired: 1` and an `expire` event for a request that had not
 * run out. What it says (the job's `budgetMs`, `elapsedMs`) is unchanged.
 *
 * Anything else — another failure, a deadline error already, a non-error —
 * is returned as it is.
 */
export function fromJobError(
  error: unknown,
  options: { deadline?: Deadline | undefined } = {},
): unknown {
  // Checked on every call, before anything is read: it runs on the failure
  // path, and a `deadline` that is no Deadline (a number of ms, a Date)
  // threw "current.remaining is not a function" from the app's error
  // handler, for a job failed by its deadline alone, in place of the 504.
  const given = callersDeadline(options)
  // `isError`, not `instanceof`: a revoked Proxy throws at the question, and
  // that TypeError replaced the error being handled. A message getter that
  // throws reads as none: not a job's reason.
  if (!isError(error) || isDeadlineExceeded(error)) return error
  const message = fieldOf(error, 'message')
  if (typeof message !== 'string' || message.length > MAX_REASON || !message.startsWith(PREFIX)) {
    return error
  }
  const read = readReason(message.slice(PREFIX.length))
  if (!read) return error
  const { said, ...details } = read
  const parsed = new JobDeadlineExceededError({ ...details, cause: error })
  // The worker's own words, not a re-telling; but not the processor's error
  // it quoted after them: this message may be sent on (gRPC's
  // `deadlineErrors()` sends a deadline error's message as `details`), and
  // what a worker's upstream said is not for a remote caller. It stays on
  // `cause`, whose message is the whole reason.
  parsed.message = `${PREFIX}${said}`
  // Not `UnrecoverableError`, the name the worker's error has so that BullMQ
  // does not retry the job whose deadline ended: that job has failed, and
  // this error is its producer's news of it. Under that name it stopped
  // BullMQ's retries of whatever rethrew it — a job that waits on another
  // job was failed on its first attempt, whatever its `attempts` said — and
  // told anything else that reads the name that no retry could help.
  parsed.name = 'JobDeadlineExceededError'
  return asOwnOrForeignExpiry(parsed, given ?? currentDeadline())
}

const OPTION_NAMES = ['deadline']

/** The `deadline` option, checked: a core `Deadline`, or none (`undefined`, `null`). */
function callersDeadline(options: unknown): Deadline | undefined {
  // Not an object: no options, as before — the index `errors.map(fromJobError)`
  // passes as the second argument is no mistake of the caller's.
  if (typeof options !== 'object' || options === null) return undefined
  if (isDeadline(options)) {
    // `fromJobError(error, req.deadline)`: ignored, the current deadline
    // was judged in its place, unseen.
    throw new TypeError(
      'fromJobError: options must be an object ({ deadline }), got a Deadline: pass { deadline }',
    )
  }
  refuseUnknownOptions(options, OPTION_NAMES, 'fromJobError()')
  const deadline = (options as { deadline?: unknown }).deadline
  if (deadline === undefined || deadline === null) return undefined
  if (!isDeadline(deadline)) {
    throw new TypeError(
      `fromJobError: deadline must be a Deadline from @hourglass/core (Deadline.after(ms)), got ${describeValue(deadline)}`,
    )
  }
  return deadline
}

interface ReadReason {
  stage: JobDeadlineStage
  jobId: string
  queue: string
  budgetMs: number
  elapsedMs: number
  budgetRecorded: boolean
  stalled?: boolean
  retryDelayMs?: number
  /** The reason up to the processor's error the worker quoted after it (stages `running`, `retry`). */
  said: string
}

/**
 * A number of ms the reason states. A reason is whatever is stored in Redis:
 * 400 digits read as Infinity, and past 2⁵³ a double no longer holds the
 * number written. Such a number is not stated reliably: NaN, as one not
 * stated at all.
 */
function readMs(digits: string | undefined): number {
  const ms = Number(digits)
  return ms <= Number.MAX_SAFE_INTEGER ? ms : Number.NaN
}

/**
 * What passed of a budget, from what was left of it: never below 0. A
 * worker never has more left than the job was added with; a reason saying
 * so read as a negative `elapsedMs`.
 */
function elapsedOf(budgetMs: number, leftMs: number): number {
  return Math.max(0, budgetMs - leftMs)
}

/** The details a worker's failedReason states, or undefined when it is not one of its forms. */
function readReason(reason: string): ReadReason | undefined {
  if (!reason.startsWith('job ')) return undefined
  // Every place a form may begin, in order: the first that reads is the one.
  const starts: number[] = []
  for (const start of STARTS) {
    let at = reason.indexOf(start)
    for (let tries = 0; at !== -1 && tries < MAX_TRIES; tries++) {
      starts.push(at)
      at = reason.indexOf(start, at + 1)
    }
  }
  starts.sort((x, y) => x - y)
  for (const at of starts.slice(0, MAX_TRIES)) {
    const head = reason.slice('job '.length, at)
    const of = head.lastIndexOf(' of ')
    if (of <= 0) continue
    const queue = head.slice(of + ' of '.length)
    if (queue === '' || queue.includes(':')) continue
    const read = readForm(reason, at + 1, { jobId: head.slice(0, of), queue, said: '' })
    if (read) return read
  }
  return undefined
}

function readForm(
  reason: string,
  at: number,
  job: { jobId: string; queue: string; said: string },
): ReadReason | undefined {
  const match = (form: RegExp) => {
    form.lastIndex = at
    const m = form.exec(reason)
    // Sticky: lastIndex is now the end of the form, before the quoted error if any.
    if (m) job.said = reason.slice(0, form.lastIndex).replace(/: $/, '')
    return m
  }
  let m = match(FORMS.late)
  if (m) {
    const [, stalled, late, budget] = m
    // A job with no budget was measured from what it had when taken: nothing, being late.
    const budgetMs = budget === undefined ? 0 : readMs(budget)
    return {
      ...job,
      stage: 'queued',
      budgetMs,
      elapsedMs: budgetMs + readMs(late),
      budgetRecorded: budget !== undefined,
      stalled: stalled !== undefined,
    }
  }
  m = match(FORMS.early)
  if (m) {
    const [, stalled, left, budget] = m
    // With no budget, what it had when taken is what it had left.
    const budgetMs = readMs(budget ?? left)
    return {
      ...job,
      stage: 'queued',
      budgetMs,
      elapsedMs: elapsedOf(budgetMs, readMs(left)),
      budgetRecorded: budget !== undefined,
      stalled: stalled !== undefined,
    }
  }
  m = match(FORMS.retry)
  if (m) {
    const [, left, budget, delay] = m
    const budgetMs = budget === undefined ? Number.NaN : readMs(budget)
    return {
      ...job,
      stage: 'retry',
      budgetMs,
      elapsedMs: elapsedOf(budgetMs, readMs(left)),
      budgetRecorded: budget !== undefined,
      retryDelayMs: readMs(delay),
    }
  }
  m = match(FORMS.running)
  if (m) {
    const [, budget] = m
    const budgetMs = budget === undefined ? Number.NaN : readMs(budget)
    // Stopped by its deadline: all of its budget had passed.
    return {
      ...job,
      stage: 'running',
      budgetMs,
      elapsedMs: budgetMs,
      budgetRecorded: budget !== undefined,
    }
  }
  return undefined
}
