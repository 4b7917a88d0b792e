import { type Deadline, defineChannel, defineChannels } from '@hourglass/core'

/** What every @hourglass/bullmq message says about the job it is about. */
export interface BullmqJobMessage {
  /** The job's id (BullMQ's `job.id`). */
  jobId: string
  /** The queue's name (without the key prefix). */
  queue: string
  /** The job's name. */
  name: string
  /**
   * The time the job was given when it was added, in ms; undefined when it
   * recorded none (its deadline was written by another producer, or by hand),
   * or one beyond 2³¹−1 ms, which vouches for nothing (the worker bounds such
   * a job by its `maxMs`, as one with none).
   */
  budgetMs: number | undefined
  /** What was left of it when the message was published, in ms (never negative). */
  remainingMs: number
  /** The trace context stored with the job by a subscriber to `enqueue`, if any. Read it; do not change it. */
  trace?: Readonly<Record<string, string>> | undefined
}

/**
 * `hourglass:bullmq:enqueue` — a job with a deadline is about to be added
 * (before anything is sent to Redis, so it has no id yet).
 */
export interface BullmqEnqueueMessage {
  /** The queue's name (without the key prefix). */
  queue: string
  /** The job's name. */
  name: string
  /** The producer's deadline, the one the job is added under. */
  deadline: Deadline
  /** The time the job is given, in ms: what the deadline has left, at most `maxMs`. */
  budgetMs: number
  /** The deadline had more left than `maxMs`: the job is given `maxMs`. */
  clamped: boolean
  /**
   * Stored with the job (`job.opts.hourglass.trace`) when a subscriber adds
   * to it, and handed back on the job's worker messages: where a tracer puts
   * its context (`traceparent`, `tracestate`). String values only, at most 8
   * entries, name and value each of at most 512 characters; others are
   * dropped when the job is stored and when it is read.
   */
  trace: Record<string, string>
}

/**
 * `hourglass:bullmq:add` — a job was added with its deadline; or, when
 * `duplicate`, BullMQ kept a job it already had with that id and returned
 * it, and the fields describe that job.
 */
export interface BullmqAddMessage extends BullmqJobMessage {
  /**
   * The time the job was given, in ms: what its deadline had left, at most
   * `maxMs`. For a `duplicate`, the kept job's (undefined when it recorded
   * none, or has no deadline at all).
   */
  budgetMs: number | undefined
  /** The deadline had more left than `maxMs`: the job was given `maxMs` (false for a `duplicate`). */
  clamped: boolean
  /**
   * When the job's time runs out, in ms on the Redis server's clock (what
   * the job carries). For a `duplicate`, the kept job's: undefined when it
   * has no deadline (`remainingMs` is then Infinity).
   */
  expiresAtMs: number | undefined
  /** The round trip of the Redis `TIME` read, in ms: the most the stored expiry is early by. */
  clockErrorMs: number
  /** The job's deadline is observe-only (dark mode): the worker reports, never enforces. */
  observe: boolean
  /**
   * BullMQ already had a job with this id (`jobId`, or a deduplication id):
   * it kept that one, unchanged, and `queue.add` returned it as if added,
   * so this call's deadline was never stored and the fields above are the
   * kept job's. Known only from Redis: read back when somebody subscribes
   * here and the job was given an id; false when it could not be read.
   */
  duplicate: boolean
}

/**
 * What every `refuse` message says: the job, why enforcement refuses it,
 * and what it throws for it.
 */
export interface BullmqRefusal {
  /** The queue's name (without the key prefix). */
  queue: string
  /** The job's name. */
  name: string
  /** The producer's deadline, the one the job would have been (or, observed, was) added under. */
  deadline: Deadline
  /**
   * - `delay`: its `delay` is at least the time it would be given (what the
   *   deadline has left, at most `maxMs`): it would reach a worker after its
   *   deadline, which fails it unrun;
   * - `ended`: the deadline had already ended (expired, or cancelled: the caller left).
   */
  reason: 'delay' | 'ended'
  /**
   * The delay that applies, ms from now: the job's `delay` counted from its
   * `timestamp`, as BullMQ counts it (the `delay` itself without one; 0 once
   * a delay counted from a past timestamp is over). Undefined when it had none.
   */
  delayMs: number | undefined
  /** What the job would have been given (`observed`: was given), in ms: the deadline's remainder, at most `maxMs` (0 once it has ended). */
  remainingMs: number
  /**
   * What `addWithDeadline` threw (`refused`), or would have thrown had the
   * deadline enforced (`observed`): a `DeadlineExceededError`, or the cancel reason.
   */
  error: unknown
}

/**
 * `hourglass:bullmq:refuse` — `addWithDeadline` refused a job that could
 * never have run in time, or, under an observe-only deadline, would have:
 * - `outcome: 'refused'`: it was not added. Nothing reached Redis for it (it
 *   has no id); the producer got `error`;
 * - `outcome: 'observed'`: the deadline is observe-only (dark mode), so the
 *   job was added all the same, as without Hourglass (`jobId` is its id),
 *   and `error` is what enforcement would have thrown. Published after the
 *   add: what an operator rolling out in dark mode looks for, the adds that
 *   enforcing would refuse. Not a refusal: nothing was refused.
 */
export type BullmqRefuseMessage =
  | (BullmqRefusal & { outcome: 'refused'; jobId?: undefined })
  | (BullmqRefusal & {
      outcome: 'observed'
      /** The id of the job added (BullMQ's `job.id`). */
      jobId: string
    })

/** `hourglass:bullmq:expire` — a job reached a worker after its deadline; it was not run. */
export interface BullmqExpireMessage extends BullmqJobMessage {
  /** The attempt it would have been (1 for the first; see `BullmqStartMessage.attempt`). */
  attempt: number
  /** How long after its deadline it reached the worker, in ms (0 when it had less than `minBudgetMs` left). */
  lateMs: number
  /**
   * It has stalled (a crashed or blocked worker lost it) at some point:
   * BullMQ's `stalledCounter` is above 0. BullMQ counts every stall of the
   * job's life and never resets the count (not on a retry, not on a
   * `job.retry()` of a failed job), and records nothing that tells which
   * attempt stalled: a job that stalled once and later came back late from a
   * back-off or a backlog says `true` too. Enforcement never reads it.
   */
  stalled: boolean
  /** Observe-only deadline: reported, and the job ran anyway. */
  observe: boolean
  outcome: 'expired'
}

/** `hourglass:bullmq:start` — an attempt of a job with a deadline begins. */
export interface BullmqStartMessage extends BullmqJobMessage {
  /** The attempt's deadline: `currentDeadline()` inside the processor. */
  deadline: Deadline
  /**
   * 1 for the first attempt: how many times a worker has taken the job
   * (BullMQ's `attemptsStarted`). A retry, a run after a stall (the job back
   * from a worker that lost its lock) and one after the processor moved its
   * job to delayed (`DelayedError`) each count; BullMQ's `attemptsMade`
   * (failed attempts, what `attempts` limits) counts only the first.
   */
  attempt: number
}

/**
 * How an attempt ended:
 * - `completed`: the processor returned in time;
 * - `completed_late`: it returned after the deadline (it did not stop when its signal aborted);
 * - `retry`: it failed and BullMQ retries it, and the next attempt fits before the deadline;
 * - `failed`: it failed and BullMQ does not retry it (attempts used up, an `UnrecoverableError`);
 * - `no_time_to_retry`: it failed, BullMQ would retry it, but the next attempt would start
 *   too late: failed with `deadline_exceeded` instead; or it asked `job.moveToDelayed` for a
 *   time that would start it too late, and the refused move failed it (also when the
 *   processor caught the refusal and threw `DelayedError`, `WaitingError` or
 *   `WaitingChildrenError`);
 * - `deadline_exceeded`: the deadline ended it while it ran: failed with `deadline_exceeded`;
 * - `deferred`: it moved itself (a `DelayedError`, `WaitingChildrenError`, `WaitingError`
 *   or a manual rate limit): BullMQ's control flow, passed through untouched. A manual
 *   rate limit (`Worker.RateLimitError`) is `deferred` even past the deadline, or stopped
 *   by it: BullMQ puts the job back in wait and the worker waits the limit out as BullMQ
 *   has it; one worker cannot know when the job will be taken again. Taken after its
 *   deadline, it is failed unrun (`expire`).
 * - `lock_lost`: the worker lost the job's lock while it ran (`lockRenewalFailed`), or
 *   was closed under it (`worker.close(true)`, which waits for no running job): the
 *   attempt was stopped (its signal aborted with a `JobLockLostError`, `why`
 *   `renewal_failed` or `worker_closed`), and whatever it ended with BullMQ could not
 *   record; another worker may run the job.
 */
export type BullmqAttemptOutcome =
  | 'completed'
  | 'completed_late'
  | 'retry'
  | 'failed'
  | 'no_time_to_retry'
  | 'deadline_exceeded'
  | 'deferred'
  | 'lock_lost'

/**
 * What enforcement would have made of an attempt that ran under an
 * observe-only deadline (dark mode), where that differs from what it did:
 * - `expired`: it reached the worker too late (past its deadline, or with less
 *   than `minBudgetMs` left): enforcement would not have run it at all, as the
 *   `expire` message says, whatever the run then did;
 * - `deadline_exceeded`: it started in time and failed after its deadline:
 *   enforcement would have stopped it there;
 * - `no_time_to_retry`: it failed before its deadline and BullMQ retries it,
 *   but the next attempt would start too late, or it moved itself to delayed
 *   (`job.moveToDelayed`, then `DelayedError`, `WaitingError` or
 *   `WaitingChildrenError`) to a time that leaves too little: enforcement
 *   would have failed it.
 *
 * A manual rate limit (`Worker.RateLimitError`) adds none, even past the
 * deadline: enforcement passes it through as well (`deferred`); only an
 * attempt that started too late still says `expired`.
 */
export type BullmqEnforcedOutcome = 'expired' | 'deadline_exceeded' | 'no_time_to_retry'

/** `hourglass:bullmq:end` — an attempt that had a `start` ended; its resources are released. */
export interface BullmqEndMessage extends BullmqJobMessage {
  deadline: Deadline
  /** The start's (see `BullmqStartMessage.attempt`). */
  attempt: number
  /** Time the attempt ran, in ms. */
  elapsedMs: number
  outcome: BullmqAttemptOutcome
  /**
   * Observe mode only: what enforcement would have made of this attempt
   * (`expired`, `deadline_exceeded`, `no_time_to_retry`), when it differs
   * from `outcome`. `expired` when the attempt started too late (after an
   * `expire` message with `observe: true`): enforcement would not have run it.
   */
  enforcedOutcome?: BullmqEnforcedOutcome
  /**
   * What the processor threw, for every outcome but the `completed` ones;
   * for a `lock_lost` attempt that returned all the same, the
   * `JobLockLostError` it was stopped with.
   */
  error?: unknown
  /**
   * The back-off BullMQ waits before the next attempt, in ms (0: straight
   * back to the queue), as BullMQ's own rule gives it: on a `retry`, and on
   * a `no_time_to_retry` whose next attempt would have started too late (not
   * one for a refused `job.moveToDelayed`). Undefined for every other end. A
   * jittered back-off is drawn once: this is the delay BullMQ applies.
   */
  retryDelayMs?: number
}

/**
 * `hourglass:bullmq:invalid` — a worker took a job whose stored deadline is
 * malformed (corrupt job data, another producer's format slip): the job runs
 * as one without a deadline, and this says why. Published on every attempt.
 */
export interface BullmqInvalidMessage {
  /** The job's id (BullMQ's `job.id`). */
  jobId: string
  /** The queue's name (without the key prefix). */
  queue: string
  /** The job's name. */
  name: string
  /** 1 for the first attempt (see `BullmqStartMessage.attempt`). */
  attempt: number
  /** `hourglass`: the option itself is not an object, or a job scheduler's run carries its template's; else the field that is malformed. */
  field: 'hourglass' | 'expiresAtMs' | 'budgetMs'
  /** The value found there, described as option errors show one (`'12' (a string)`, `-5`, `null`, `Infinity`, `an object`), never the value itself. */
  value: string
  /** Why it was refused: `not a finite number ≥ 0`, `missing`, `not an object`, `from a job scheduler's template: one expiry for every run`. */
  reason: string
}

/**
 * The diagnostics channels @hourglass/bullmq publishes on (only while somebody
 * subscribes). Every message but `enqueue`, `refuse` and `invalid` carries the
 * job id, queue, `budgetMs` and `remainingMs` (and the stored `trace`, if
 * any); `refuse` carries the job id only when `observed` (that job was
 * added). `refuse`, `expire` and `end` carry an `outcome`.
 */
export const bullmqChannels = defineChannels('bullmq', {
  /** A job with a deadline is about to be added: a tracer may store its context with it. */
  enqueue: defineChannel<BullmqEnqueueMessage>('hourglass:bullmq:enqueue'),
  /** A job was added with its deadline. */
  add: defineChannel<BullmqAddMessage>('hourglass:bullmq:add'),
  /** An attempt of a job with a deadline begins. */
  start: defineChannel<BullmqStartMessage>('hourglass:bullmq:start'),
  /** An attempt that had a `start` ended. */
  end: defineChannel<BullmqEndMessage>('hourglass:bullmq:end'),
  /** A job was not added, or (observe-only deadline) was added but enforcement would not have: its delay outlasts its deadline, or the deadline had ended. */
  refuse: defineChannel<BullmqRefuseMessage>('hourglass:bullmq:refuse'),
  /** A job reached a worker after its deadline; it was not run. */
  expire: defineChannel<BullmqExpireMessage>('hourglass:bullmq:expire'),
  /** A worker took a job whose stored deadline is malformed; it runs without one. */
  invalid: defineChannel<BullmqInvalidMessage>('hourglass:bullmq:invalid'),
})

declare module '@hourglass/core' {
  interface ChannelGroups {
    bullmq: typeof bullmqChannels
  }
}
