// Node's own, not the global: see the turn of the loop after a deadline ended.
import { setImmediate } from 'node:timers'
import {
  type Clock,
  Deadline,
  describeValue,
  fieldOf,
  isClock,
  isDeadlineExceeded,
  MAX_TIMER_MS,
  optionError,
  refuseUnknownOptions,
  runOutsideContext,
  runWithDeadline,
  systemClock,
} from '@hourglass/core'
import type { Job, Processor } from 'bullmq'
import { attemptOf } from './attemptOf.js'
import {
  type BullmqAttemptOutcome,
  type BullmqEnforcedOutcome,
  type BullmqJobMessage,
  bullmqChannels,
} from './channels.js'
import { isExpiryToldEarly } from './expiryToldEarly.js'
import { guardDelay, isDelayRefusal } from './guardDelay.js'
import { isJobDeadlineExceeded, JobDeadlineExceededError } from './JobDeadlineExceededError.js'
import { isJobLockLost, JobLockLostError } from './JobLockLostError.js'
import { isDeferral, isOwnMove, nextAttempt } from './nextAttempt.js'
import { onLockLost } from './onLockLost.js'
import { giveBackRateLimitSlot } from './rateLimitSlot.js'
import { readRedisTime, scriptClientOf, toLocalMs } from './redisTime.js'
import { DEADLINE_OPTION, type MalformedDeadline, readStoredDeadline } from './storedDeadline.js'
import { withCauseStack } from './withCauseStack.js'

export interface WithDeadlineOptions {
  /**
   * A job with less than this left when a worker takes it is not run (nor is
   * a failed attempt retried when its next one would start with less), in ms.
   * Default 5; `0` = only a deadline that has passed.
   */
  minBudgetMs?: number | undefined
  /**
   * How late BullMQ may hand a delayed job — a retry's back-off, a
   * `job.moveToDelayed` — to an idle worker after its delay ends, in ms: a
   * retry (or a move) is let through only if `minBudgetMs` is left after its
   * delay and this. An idle worker waits for a delayed job in a blocking
   * Redis command (`BZPOPMIN` on the queue's marker, timed out at the job's
   * time), and Redis times out blocked commands on its `hz` timer, 10 times a
   * second by default: the job is taken up to 100 ms after its delay ends.
   * Default 100; lower it for a Redis with a higher `hz`; `0` = a delay ends
   * on time. Not counted for a back-off of 0, which puts the job straight
   * back in wait. Less than 2³¹−1.
   */
  delayLagMs?: number | undefined
  /**
   * The most time a job that recorded no `budgetMs` (or one beyond 2³¹−1 ms,
   * which addWithDeadline never records) is given, in ms — one whose
   * `hourglass` option another producer, or a hand, wrote: its expiry
   * alone could say anything (a µs slip puts it 57,000 years away). A job
   * added by `addWithDeadline` records its budget and is bounded by that,
   * not by this. Default 3 600 000 (an hour). A finite number > 0, at most
   * 2³¹−1 (cut to it, as addWithDeadline's `maxMs` is).
   */
  maxMs?: number | undefined
  /** Time source for the jobs' deadlines; a `ManualClock` drives them in tests. Default: the system clock. */
  clock?: Clock | undefined
}

/**
 * Default `maxMs`. Not the ingresses' 30 s: that bounds a request someone is
 * waiting on, while a job legitimately sits in a backlog, a `delay` or a
 * back-off for minutes, and a cap that short would expire honest jobs of
 * another producer. Nor "the largest budget addWithDeadline stores": it
 * stores what its deadline has left, which has no upper bound. An hour is
 * far beyond any deadline that came from a request (the ingresses cap those
 * at 30 s by default) and still bounds a unit slip; a producer whose jobs
 * need longer records `budgetMs`, or its workers raise `maxMs`.
 */
const DEFAULT_MAX_MS = 3_600_000

/**
 * Default `delayLagMs`: Redis's default `hz` (10) checks a blocked command's
 * timeout every 100 ms, so an idle worker's wait for a delayed job ends up
 * to 100 ms after the job's time (measured on redis-server 7: 60–95 ms
 * late at hz 10, a few ms at hz 100). Taken at face value, a retry let
 * through with less than that to spare was failed unrun when it arrived,
 * counted `expired` at stage `queued` — a dropped retry, reported late and
 * as the queue's fault; or it ran, by the luck of where in Redis's 100 ms
 * tick its delay ended.
 */
const DEFAULT_DELAY_LAG_MS = 100

const OPTION_NAMES = Object.keys({
  minBudgetMs: true,
  maxMs: true,
  clock: true,
  delayLagMs: true,
} satisfies Record<keyof WithDeadlineOptions, true>)

/** What a wrapped processor has done to jobs with deadlines, since it was created. */
export interface DeadlineCounts {
  /**
   * Jobs that reached the worker after their deadline (waiting, delayed,
   * back from a stall) and were failed without running. Not one whose lock
   * the worker lost before it started: it ends `lock_lost`.
   */
  expired: number
  /**
   * Attempts that were running when their deadline ended (their signal
   * aborted) and were failed; also those failed, within 100 ms of it, by a
   * service they called answering DEADLINE_EXCEEDED for it first.
   */
  stopped: number
  /**
   * Failed attempts BullMQ would have retried, failed instead because the
   * next attempt would start too late; and attempts whose own
   * `job.moveToDelayed` asked for a time that would start it too late: the
   * move was refused and the attempt failed (whether the refusal propagated
   * or the processor caught it and threw `DelayedError`, `WaitingError` or
   * `WaitingChildrenError`). Not a manual rate limit (`Worker.RateLimitError`):
   * the job goes back to wait as BullMQ does it, and if it is taken after its
   * deadline it counts in `expired`.
   */
  retriesDropped: number
}

/** A BullMQ processor that enforces the deadlines jobs carry, and counts what it did. */
export type DeadlineProcessor<DataType, ResultType, NameType extends string> = Processor<
  DataType,
  ResultType,
  NameType
> & {
  /** Live counters (read them at any time). */
  readonly counts: Readonly<DeadlineCounts>
}

/**
 * Wrap a BullMQ processor so that the deadline a job carries (see
 * `addWithDeadline`) is enforced: `new Worker(name, withDeadline(fn), opts)`.
 *
 * - A job whose deadline has passed when the worker takes it — waiting too
 *   long, delayed past it, back from a stalled worker — never runs: it is
 *   failed, unrecoverably, with a `deadline_exceeded` reason, counted, and
 *   reported on `hourglass:bullmq:expire`.
 * - A running attempt has the deadline as `currentDeadline()` (so
 *   `createFetch`, `callModel` and slices inside obey it) and as the signal
 *   passed to `fn`, which aborts at the deadline, when BullMQ's own signal
 *   does (`worker.cancelJob`), or when the worker reports the job's lock lost
 *   (`lockRenewalFailed`: another worker may be given the job) or closes
 *   under it (`worker.close(true)`, which waits for no running job) — with
 *   a `JobLockLostError`, the attempt ending `lock_lost`. A lock lost before
 *   the attempt started (while Redis's clock is read) ends it so without
 *   calling the processor, even for a job too late (not counted `expired`).
 * - An attempt that fails, with 100 ms or less of its deadline left, with a
 *   service's DEADLINE_EXCEEDED (a gRPC status, or a deadline error of its
 *   own in the `cause` chain) was stopped by that deadline: not retried.
 * - A failed attempt is retried only if BullMQ's back-off (and `delayLagMs`,
 *   the lag of a delayed job) leaves time for the next one; otherwise the job
 *   fails with `deadline_exceeded`.
 * - A `job.moveToDelayed(timestamp, token)` that would resume the job after
 *   its deadline, or with less than `minBudgetMs` left `delayLagMs` after
 *   it, is refused: it rejects with that `deadline_exceeded` error and the
 *   job stays active, and the attempt fails with it — also when the processor catches it and
 *   throws `DelayedError`, `WaitingError` or `WaitingChildrenError` as if the
 *   job had moved (left so, it sat in active until BullMQ's stall check).
 *   Under an observe-only deadline it moves as asked, and the attempt's
 *   `DelayedError` ends it `deferred` with `enforcedOutcome: 'no_time_to_retry'`.
 * - A manual rate limit (`Worker.RateLimitError`) is BullMQ's, even past the
 *   deadline: the attempt ends `deferred`, the job goes back to wait and the
 *   worker waits the limit out as BullMQ has it (at most its
 *   `maximumRateLimitDelay`). One worker cannot know when the job will be
 *   taken again; taken after its deadline, it is failed unrun as `expired`.
 * - A job is never given more than the budget it was added with, nor, when
 *   it recorded none, than `maxMs`, whatever its stored expiry says.
 * - Jobs without a deadline — or with a malformed one — run exactly as before;
 *   a malformed one is reported on `hourglass:bullmq:invalid`.
 *
 * Only in-process processors (a function); not sandboxed processor files.
 */
export function withDeadline<
  DataType = unknown,
  ResultType = unknown,
  NameType extends string = string,
>(
  processor: Processor<DataType, ResultType, NameType>,
  options: WithDeadlineOptions = {},
): DeadlineProcessor<DataType, ResultType, NameType> {
  // A typo is refused as every factory refuses one: ignored, `{ maxMS: 60_000 }`
  // left jobs that recorded no budget their hour, unseen.
  refuseUnknownOptions(options, OPTION_NAMES, 'withDeadline()')
  // Bad values are shown as every package shows them (core's describeValue):
  // `String('60000')` read as the number 60000, the very value that was fine.
  const minBudgetMs = options.minBudgetMs ?? 5
  if (typeof minBudgetMs !== 'number' || Number.isNaN(minBudgetMs) || minBudgetMs < 0) {
    throw optionError('withDeadline: minBudgetMs', 'a number ≥ 0', minBudgetMs)
  }
  const delayLagMs = options.delayLagMs ?? DEFAULT_DELAY_LAG_MS
  if (typeof delayLagMs !== 'number' || !Number.isFinite(delayLagMs) || delayLagMs < 0) {
    // Infinity would drop every delayed retry, a lag no Redis has.
    throw optionError('withDeadline: delayLagMs', 'a finite number ≥ 0', delayLagMs)
  }
  if (delayLagMs >= MAX_TIMER_MS) {
    // No lag a Redis has either (its slowest `hz`, 1, is a second late): a
    // timestamp where a duration belongs (`Date.now()`). Accepted, every
    // retry with a back-off of a job addWithDeadline added (which records at
    // most 2³¹−1 ms) was dropped, and every moveToDelayed refused.
    throw new RangeError(
      `withDeadline: delayLagMs (${delayLagMs}) must be less than ${MAX_TIMER_MS} ms (2³¹−1, the most a job's recorded budget is): every retry after a back-off would be dropped`,
    )
  }
  const givenMaxMs = options.maxMs ?? DEFAULT_MAX_MS
  if (typeof givenMaxMs !== 'number' || !Number.isFinite(givenMaxMs) || givenMaxMs <= 0) {
    // Infinity too: the point of the cap is that no job goes unbounded.
    throw optionError('withDeadline: maxMs', 'a finite number > 0', givenMaxMs)
  }
  // Cut to 2³¹−1 ms, as addWithDeadline's maxMs and every ingress's are: a
  // job that recorded no budget was given up to the whole `maxMs: 1e12`
  // (31 years, reported as its budget), while one that recorded more than
  // 2³¹−1 ms is bounded by this very cap — it vouches for nothing.
  const maxMs = Math.min(givenMaxMs, MAX_TIMER_MS)
  if (maxMs < minBudgetMs) {
    // Every job without a budget would be refused as having too little left,
    // and, past 2³¹−1 ms, every job with one too (none records more).
    const shown = maxMs === givenMaxMs ? `${maxMs}` : `${givenMaxMs}, cut to ${maxMs}`
    throw new RangeError(
      `withDeadline: maxMs (${shown}) must not be less than minBudgetMs (${minBudgetMs})`,
    )
  }
  if (typeof processor !== 'function') {
    // Else "Cannot read properties of undefined (reading 'length')" below.
    throw new TypeError(
      `withDeadline: processor must be a function, got ${describeValue(processor)}`,
    )
  }
  const clock = options.clock ?? systemClock
  if (!isClock(clock)) {
    // Accepted, it failed every job that carries a deadline ("clock.now is
    // not a function") instead of the worker's start.
    throw new TypeError(
      `withDeadline: clock must be a Clock (now, setTimeout and clearTimeout functions), got ${describeValue(clock)}`,
    )
  }
  const counts: DeadlineCounts = { expired: 0, stopped: 0, retriesDropped: 0 }
  // As BullMQ does: a processor that declares no third parameter gets no
  // signal, and no AbortController is made for it (the deadline still stops
  // `createFetch` and the rest through `currentDeadline()`).
  const wantsSignal = processor.length >= 3

  // Three declared parameters: BullMQ passes its AbortSignal only to a
  // processor whose `length` is at least 3.
  //
  // The whole attempt runs outside the context the worker was made in:
  // everything a worker starts keeps it, and a worker made where it is first
  // needed (a request handler, a gRPC handler, a job) ran every job without
  // a deadline of its own under that request's — long over — so its
  // createFetch, callModel and gRPC calls were refused as out of time. Not
  // the processor alone: the job's deadline is made here, and its timer
  // keeps the context it was armed in, so at the job's expiry its signal's
  // `abort` listeners, and all they started (a cleanup call, a log line),
  // ran under that request's deadline and request id; so did the `start`
  // and `end` messages (a tracer tagged every job with that request's id).
  // A job starts from a clean context: none, or its own deadline.
  //
  // A `function`, not an arrow: BullMQ calls its processor as a method of
  // the Worker (`this.processFn(job, token, signal)`), and a `function`
  // processor reads that `this` (`this.rateLimit(ms)` before
  // `Worker.RateLimitError()`, `this.name`): it is handed on. Lost, such a
  // processor threw a TypeError and every job failed.
  const wrapped = function (
    this: unknown,
    job: Job<DataType, ResultType, NameType>,
    token?: string,
    signal?: AbortSignal,
  ): Promise<ResultType> {
    return runOutsideContext(() => runAttempt(this, job, token, signal))
  }
  const runAttempt = async (
    self: unknown,
    job: Job<DataType, ResultType, NameType>,
    token: string | undefined,
    signal: AbortSignal | undefined,
  ): Promise<ResultType> => {
    // A malformed deadline is run as none (failing the job for its options
    // would turn a format slip into lost work), but not silently.
    const onMalformed = bullmqChannels.invalid.hasSubscribers
      ? (problem: MalformedDeadline) => reportMalformed(job, problem)
      : undefined
    const stored = fromSchedulerTemplate(job, onMalformed)
      ? undefined
      : readStoredDeadline(job.opts, onMalformed)
    // No deadline: as before, in the clean context `wrapped` set up.
    if (!stored) return processor.call(self, job, token, signal)

    const backend = (job as unknown as { backend?: unknown }).backend
    if (backend === undefined) {
      // A sandboxed processor's job (a processor file run in a child process
      // or a worker thread) is a copy without its queue's backend: every
      // deadline job failed with "needs a Redis-backed queue", the wrong cause.
      const error = new TypeError(
        '@hourglass/bullmq: withDeadline() runs in the worker’s own process only — a sandboxed processor (a processor file) has no Redis connection to read the job’s deadline through: wrap the processor function given to new Worker() instead',
      )
      // The same on every attempt: named as BullMQ tells a failure it must
      // not retry (as JobDeadlineExceededError is), or each of `attempts`
      // ran it again after its back-off, to fail the same way.
      error.name = 'UnrecoverableError'
      throw error
    }
    // A lost lock: BullMQ may give the job to another worker, and aborts no
    // signal for it (only cancelJob does). Stopped here, this attempt does
    // not run the job a second time beside it. Even under an observe-only
    // deadline: this is no deadline's enforcement.
    // So is a force close of the worker under the attempt (`close(true)`):
    // it renews no lock and records nothing of the attempt, and the stall
    // check gives the job to another worker.
    // Watched from before the clock is read: the worker reports a lost lock
    // once, and one reported during that round trip (a renewal sent before
    // the reading is answered first) was never heard — the attempt ran with
    // a live signal beside the worker the stall check gave the job to. Told
    // before the deadline exists, it is kept for it.
    // Outside the context of whatever told it (the worker's lock renewal
    // timer, a `close()` caller's request), as the deadline's own expiry: the
    // signal's `abort` listeners ran under the request that made the worker.
    let deadline: Deadline | undefined
    let lockLost: JobLockLostError | undefined
    const unwatch = onLockLost(job, (why) =>
      runOutsideContext(() => {
        const lost = new JobLockLostError({ jobId: job.id ?? '', queue: job.queueName, why })
        if (deadline) deadline.cancel(lost)
        else lockLost ??= lost
      }),
    )
    let sample: Awaited<ReturnType<typeof readRedisTime>>
    let client: Awaited<ReturnType<typeof scriptClientOf>>
    try {
      client = await scriptClientOf(backend)
      sample = await readRedisTime(client, `${job.queueQualifiedName}:meta`, clock)
    } catch (error) {
      // Nothing runs: the watch ends here (and on the expiry below), as the
      // attempt's own `finally` ends it for an attempt that ran.
      unwatch()
      throw error
    }
    // An honest job never has more left than it was added with (the producer
    // rounds both down). More means a bad expiry — a foreign producer's unit
    // slip, a Redis clock stepped back, a hand edit — that would otherwise
    // make the job's deadline years long: cut to the budget it recorded. A job
    // that recorded none has nothing to check its expiry against, so it is
    // cut to the worker's maxMs: every deadline a worker gives is bounded.
    // So is one whose recorded budget is beyond 2³¹−1 ms, which no
    // addWithDeadline records (its maxMs is cut to that): such a budget
    // vouches for nothing, and a job recording 1e300 with an expiry as far
    // ran with no bound at all.
    const fromExpiry = toLocalMs(stored.expiresAtMs, sample) - clock.now()
    const vouching = stored.budgetMs !== undefined && stored.budgetMs <= MAX_TIMER_MS
    const vouched = vouching ? (stored.budgetMs as number) : maxMs
    const remaining = Math.min(fromExpiry, vouched)
    // A job that recorded no budget is not reported as "added with 0 ms":
    // messages say undefined, and errors measure against the time it had when
    // this worker took it, and say that no budget was recorded. Nor does one
    // whose budget vouches for nothing (beyond 2³¹−1 ms) state it: its
    // failedReason said `added with 1e+300 ms left`, which fromJobError does
    // not read (the producer got a plain Error: 500, not 504), and the
    // lateness measured against it was lost in the doubles (`0 ms after`).
    const budgetRecorded = vouching
    const budgetMs = vouching ? (stored.budgetMs as number) : Math.max(0, remaining)
    const about = (remainingMs: number): BullmqJobMessage => ({
      jobId: job.id ?? '',
      queue: job.queueName,
      name: job.name,
      // What the job is run under: one beyond 2³¹−1 ms is none recorded, as
      // its errors say, not a figure beside a deadline of the worker's maxMs.
      budgetMs: budgetRecorded ? budgetMs : undefined,
      remainingMs: Math.max(0, Math.floor(remainingMs)),
      ...(stored.trace ? { trace: stored.trace } : {}),
    })
    const attempt = attemptOf(job)

    // A lock lost while the clock was read ends the attempt `lock_lost`
    // before anything else is judged: the job is another worker's now, and
    // BullMQ can record nothing of it here. Failed as expired instead, it was
    // counted `expired` (and reported so) by this worker, and again by the
    // worker the stall check handed it to.
    const tooLate = lockLost === undefined && (remaining <= 0 || remaining < minBudgetMs)
    if (tooLate) {
      const stalled = job.stalledCounter > 0
      bullmqChannels.expire.publish(() => ({
        ...about(remaining),
        attempt,
        lateMs: Math.max(0, Math.ceil(-remaining)),
        stalled,
        observe: stored.observe === true,
        outcome: 'expired',
      }))
      if (!stored.observe) {
        unwatch()
        counts.expired++
        // Not run, so not counted against the rate limit, as BullMQ spares a
        // job it fails unrun itself: counted, a backlog of dead jobs was
        // drained one limiter window each, and live jobs behind it expired.
        await giveBackRateLimitSlot(job, client).catch(() => {})
        throw new JobDeadlineExceededError({
          stage: 'queued',
          jobId: job.id ?? '',
          queue: job.queueName,
          budgetMs,
          elapsedMs: budgetMs - remaining,
          budgetRecorded,
          stalled,
        })
      }
    }

    // Born cancelled by a lock lost already: `after()` of a job with no time
    // left would expire it first, and the end would read as a deadline's.
    deadline = Deadline.after(remaining, {
      clock,
      observe: stored.observe === true,
      ...(lockLost ? { signal: abortedWith(lockLost) } : {}),
    })
    // BullMQ's own signal (`worker.cancelJob()`) cancels it outside the
    // canceller's context, as the lost lock above: followed through the
    // `signal` option, its abort listeners ran under the request of the
    // admin call that cancelled the job (its id, its deadline).
    const onCancel = signal && (() => runOutsideContext(() => deadline.cancel(signal.reason)))
    if (signal?.aborted) deadline.cancel(signal.reason)
    else if (signal && onCancel) signal.addEventListener('abort', onCancel, { once: true })
    const startedAt = clock.now()
    bullmqChannels.start.publish(() => ({ ...about(deadline.remaining()), deadline, attempt }))
    let outcome: BullmqAttemptOutcome = 'failed'
    // Only an observe-only deadline gets here too late. Enforcement would not
    // have run this attempt at all, so that is what it would have made of it,
    // however the run ends: not `deadline_exceeded` (stopped while running)
    // or `no_time_to_retry`, nor nothing because the run happened to succeed.
    let enforced: BullmqEnforcedOutcome | undefined = tooLate ? 'expired' : undefined
    let thrown: unknown
    /** The deadline error made for the processor's failure, handed to BullMQ instead of it. */
    let instead: JobDeadlineExceededError | undefined
    let retryDelayMs: number | undefined
    // Under an observe-only deadline it refuses nothing, and records what it would have refused.
    const delayGuard = guardDelay(job, deadline, {
      budgetMs,
      budgetRecorded,
      minBudgetMs,
      delayLagMs,
    })
    try {
      // Its lock lost before it started: the processor is not called at all.
      // Called with an aborted signal, whatever it did that ignores the
      // signal (a database write, an email) was done twice — here and by the
      // worker the stall check gave the job to.
      if (lockLost) throw lockLost
      const result = await runWithDeadline(deadline, () =>
        processor.call(self, job, token, wantsSignal ? deadline.signal : undefined),
      )
      // Returned after the lost lock stopped it: BullMQ throws the result
      // away, and the end says why, as for an attempt that threw.
      if (isJobLockLost(deadline.reason)) {
        outcome = 'lock_lost'
        thrown = deadline.reason
      } else outcome = deadline.expired ? 'completed_late' : 'completed'
      return result
    } catch (error) {
      thrown = error
      const decided = await decide(
        error,
        job,
        deadline,
        { budgetMs, budgetRecorded },
        { minBudgetMs, delayLagMs },
        counts,
        delayGuard.refusal,
      )
      outcome = decided.outcome
      enforced ??= decided.enforced
      retryDelayMs = decided.retryDelayMs
      const handed = decided.error
      if (handed !== error && isJobDeadlineExceeded(handed) && handed.cause === error) {
        instead = handed
      }
      // BullMQ reads `err.message` of what it is handed (Worker.handleFailed)
      // and throws on undefined, null or a revoked Proxy: it emitted that
      // TypeError on the worker's `error` event and left the job in active,
      // unrecorded, until the stall check put it back in wait — run again
      // whatever `attempts` said, or, its deadline past by then, failed
      // unrun as "back from a stalled worker". Handed an Error naming it
      // (a deadline's error quotes what was thrown itself).
      if (unreadableByBullmq(handed)) throw unreadableRejection(handed)
      throw handed
    } finally {
      unwatch()
      if (signal && onCancel) signal.removeEventListener('abort', onCancel)
      delayGuard.undo()
      const ended = deadline.done || deadline.expired
      const endReason = ended ? deadline.reason : undefined
      // Read before the dispose: a deadline disposed while live reads as one
      // that never expires (remaining() Infinity), and the end reports what
      // the job had left when it ended.
      const leftMs = deadline.remaining()
      deadline.dispose()
      bullmqChannels.end.publish(() => ({
        ...about(leftMs),
        deadline,
        attempt,
        elapsedMs: clock.now() - startedAt,
        outcome,
        ...(enforced === undefined ? {} : { enforcedOutcome: enforced }),
        ...(retryDelayMs === undefined ? {} : { retryDelayMs }),
        ...(outcome === 'completed' || outcome === 'completed_late' ? {} : { error: thrown }),
      }))
      // Deadlines of jobs started together end together, each on its own
      // timer, and Node runs every microtask a timer callback sets off before
      // the next timer fires. Hand the job back to BullMQ (a Redis write, a
      // stack trace, the next fetch) on the next turn of the event loop, so
      // the other jobs' deadlines due now fire first and their calls are
      // aborted on time, not after this job's bookkeeping. `node:timers`'
      // own setImmediate, a turn of the real loop: fake timers replace the
      // global one, and the job stayed active until the test moved fake time.
      if (ended) await new Promise<void>((resolve) => setImmediate(resolve))
      // With the processor's stack after its own: BullMQ stores this error's
      // stack as the job's `stacktrace`, the only one a dashboard shows.
      // After the turn above: formatting two stacks is bookkeeping too. Not
      // when the processor rejected with the deadline's own reason, or an
      // abort made of it (fetch, timers/promises reject with an AbortError
      // whose cause it is): that stack is the deadline's timer firing, not
      // where the processor was — the trace only grew and said the message
      // twice. Any other error, an abort of the processor's own or an SDK's
      // (whose stack is the call's), keeps its stack.
      const cause = instead?.cause
      const timersStack =
        endReason !== undefined && (cause === endReason || fieldOf(cause, 'cause') === endReason)
      if (instead && !timersStack) {
        withCauseStack(instead, cause)
      }
    }
  }
  return Object.assign(wrapped, { counts }) as DeadlineProcessor<DataType, ResultType, NameType>
}

/**
 * A rejection BullMQ cannot read `message` and `name` of without a throw:
 * undefined (`reject()` with no argument), null, a revoked Proxy, a getter
 * that throws.
 */
function unreadableByBullmq(value: unknown): boolean {
  if (value === undefined || value === null) return true
  try {
    void (value as { message?: unknown }).message
    void (value as { name?: unknown }).name
    return false
  } catch {
    return true
  }
}

/** A signal aborted already with `reason` (to make a deadline born cancelled). */
function abortedWith(reason: unknown): AbortSignal {
  const controller = new AbortController()
  controller.abort(reason)
  return controller.signal
}

/** What a failed attempt becomes, and the error BullMQ is handed. */
async function decide(
  error: unknown,
  job: Job,
  deadline: Deadline,
  { budgetMs, budgetRecorded }: { budgetMs: number; budgetRecorded: boolean },
  { minBudgetMs, delayLagMs }: { minBudgetMs: number; delayLagMs: number },
  counts: DeadlineCounts,
  refusal: JobDeadlineExceededError | undefined,
): Promise<{
  outcome: BullmqAttemptOutcome
  error: unknown
  enforced?: BullmqEnforcedOutcome
  /** BullMQ's back-off before the next attempt, when it retries (or would have). */
  retryDelayMs?: number
}> {
  // Its worker lost the job's lock and this attempt was stopped for it
  // (onLockLost): BullMQ can record nothing of it (the lock is gone), and
  // another worker may have the job. Not retried, not counted as a deadline's.
  if (isJobLockLost(deadline.reason)) {
    return { outcome: 'lock_lost', error: isJobLockLost(error) ? error : deadline.reason }
  }
  const fail = (stage: 'running' | 'retry', retryDelayMs?: number) =>
    new JobDeadlineExceededError({
      stage,
      jobId: job.id ?? '',
      queue: job.queueName,
      budgetMs,
      elapsedMs: budgetMs - deadline.remaining(),
      budgetRecorded,
      cause: error,
      ...(retryDelayMs === undefined ? {} : { retryDelayMs }),
    })
  // Ended by its deadline — not by BullMQ's own signal (a cancel, a lost lock),
  // whose reason BullMQ must see as it is. An observe-only deadline that has
  // passed is done with no reason (it aborted nothing): it ran out all the same.
  // So did one a service it called told of, answering DEADLINE_EXCEEDED its
  // reserve before the job's own timer (see isExpiryToldEarly): retried, the
  // job spent its attempts on calls that arrived expired.
  const ranOut =
    deadline.done && deadline.reason !== undefined
      ? isDeadlineExceeded(deadline.reason)
      : deadline.expired || isExpiryToldEarly(error, deadline)
  // A DelayedError, WaitingError or WaitingChildrenError after a refused
  // moveToDelayed, with no move since (BullMQ's step-job pattern, the refusal
  // caught): the job never moved, and BullMQ, told it did, leaves it in
  // active with no worker until its stall check puts it back, past its
  // deadline. The job is still in active, so the attempt can be failed — by
  // its deadline first, if that is what ended it.
  const refusedMove = refusal !== undefined && isOwnMove(error)
  if (refusedMove && ranOut) {
    if (deadline.observe) return { outcome: 'deferred', error, enforced: 'deadline_exceeded' }
    counts.stopped++
    return { outcome: 'deadline_exceeded', error: fail('running') }
  }
  if (refusedMove) {
    if (deadline.observe) return { outcome: 'deferred', error, enforced: 'no_time_to_retry' }
    counts.retriesDropped++
    return { outcome: 'no_time_to_retry', error: refusal }
  }
  // Other deferrals announce moves the job has made: it is no longer in
  // active, and nothing here can fail it. A manual rate limit
  // (`Worker.RateLimitError`) passes through untouched too, even past the
  // deadline or stopped by it. One worker cannot judge whether the job would
  // resume too late: which limit BullMQ applies depends on the queue-wide
  // max, each worker's limiter and whether another worker is idle. And a
  // worker without a limiter holds off (its `limitUntil`, at most
  // `maximumRateLimitDelay`) after that error only: failed in its place, it
  // took its next job at once, against the limit just set for an upstream's
  // 429. A job taken after its deadline is failed unrun, counted `expired`,
  // which names the real cause.
  if (isDeferral(error)) return { outcome: 'deferred', error }
  if (ranOut && !deadline.observe) {
    counts.stopped++
    return { outcome: 'deadline_exceeded', error: fail('running') }
  }
  // The processor asked to park the job past its deadline (guardDelay): the
  // job is still active, so this failure is final, as a retry that would not
  // fit — unless a move took the job out of active first (the guard then
  // holds no refusal): it is where that move put it, and the refusal, thrown
  // on, is the processor's error as any other.
  if (isDelayRefusal(error) && refusal !== undefined) {
    counts.retriesDropped++
    return { outcome: 'no_time_to_retry', error }
  }
  // Observe mode: what enforcement would have made of it, when that differs.
  const observed = ranOut ? { enforced: 'deadline_exceeded' as const } : {}
  // Judged, and its answer pinned, as what BullMQ is handed: a rejection it
  // cannot read goes on as a TypeError naming it, which BullMQ retries.
  // Asked with the raw value, BullMQ's shouldRetryJob threw reading its
  // `name`, the attempt was judged "no retry" (`end`: failed), and BullMQ
  // then retried the TypeError unjudged: parked in delayed past the
  // deadline, failed unrun later.
  const handed = unreadableByBullmq(error) ? unreadableRejection(error) : error
  const next = await nextAttempt(job, handed)
  if (!next.retry) return { outcome: 'failed', error: handed, ...observed }
  // A delayed retry reaches a worker up to delayLagMs after its back-off
  // ends (BullMQ's promotion, on Redis's timer); one with no back-off goes
  // straight back to wait.
  const left = deadline.remaining() - next.delayMs - (next.delayMs > 0 ? delayLagMs : 0)
  if (left <= 0 || left < minBudgetMs) {
    if (deadline.observe)
      return {
        outcome: 'retry',
        error: handed,
        enforced: ranOut ? 'deadline_exceeded' : 'no_time_to_retry',
        retryDelayMs: next.delayMs,
      }
    counts.retriesDropped++
    return {
      outcome: 'no_time_to_retry',
      error: fail('retry', next.delayMs),
      retryDelayMs: next.delayMs,
    }
  }
  return { outcome: 'retry', error: handed, ...observed, retryDelayMs: next.delayMs }
}

/** What BullMQ is handed for a rejection it cannot read (see `runAttempt`). */
function unreadableRejection(value: unknown): TypeError {
  return new TypeError(`the processor rejected with ${describeValue(value)}, not an error`)
}

/**
 * A run made by a job scheduler (`upsertJobScheduler`, or a legacy repeatable
 * job: BullMQ sets its `repeatJobKey`) whose options carry an `hourglass`
 * option: the scheduler stamps every run with its template's options, so that
 * is one absolute expiry for every run — typically another job's, copied
 * with `{ ...job.opts }` to keep its `attempts` and `backoff`. Read as a
 * deadline, it bounded the runs before it and failed every run after it
 * unrun, for as long as the scheduler lived. It is nobody's deadline: the
 * run is treated as having none (reported, as a malformed one is).
 * addWithDeadline never adds such a job: BullMQ keeps the key out of
 * `job.opts`, so a job re-added with a scheduled run's options is no run.
 */
function fromSchedulerTemplate(
  job: Job,
  onMalformed: ((problem: MalformedDeadline) => void) | undefined,
): boolean {
  const key = (job as { repeatJobKey?: unknown }).repeatJobKey
  if (typeof key !== 'string' || key === '') return false
  const stored = (job.opts as Record<string, unknown> | undefined)?.[DEADLINE_OPTION]
  if (stored === undefined || stored === null) return false
  onMalformed?.({
    field: DEADLINE_OPTION,
    value: stored,
    reason: "from a job scheduler's template: one expiry for every run",
  })
  return true
}

/** `hourglass:bullmq:invalid`: the value described, never handed over as it is (it may be anything). */
function reportMalformed(job: Job, problem: MalformedDeadline): void {
  bullmqChannels.invalid.publish(() => ({
    jobId: job.id ?? '',
    queue: job.queueName,
    name: job.name,
    attempt: attemptOf(job),
    field: problem.field,
    value: describeValue(problem.value),
    reason: problem.reason,
  }))
}
