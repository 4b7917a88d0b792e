import { randomUUID } from 'node:crypto'
import {
  currentDeadline,
  type Deadline,
  DeadlineExceededError,
  describeValue,
  expiryError,
  isDeadline,
  isForeignExpiry,
  MAX_TIMER_MS,
  markExpiryOf,
  optionError,
  outcomeWithin,
  untilEnded,
} from '@hourglass/core'
import type { Job, JobsOptions } from 'bullmq'
import { asOwnOrForeignExpiry } from './asOwnOrForeignExpiry.js'
import { type BullmqRefusal, bullmqChannels } from './channels.js'
import { enforcingDeadline } from './enforcingDeadline.js'
import { keptInstead, mayBeDuplicate } from './keptInstead.js'
import { luaNumber } from './luaNumber.js'
import { readRedisTime, scriptClientOf, toLocalMs, toRedisMs } from './redisTime.js'
import { mayReschedule, rescheduledJob } from './rescheduledJob.js'
import { DEADLINE_OPTION, readTrace, type StoredDeadline } from './storedDeadline.js'

export interface AddWithDeadlineOptions extends JobsOptions {
  /**
   * The deadline the job must be done by. Default: `currentDeadline()`. With
   * neither (or `Deadline.never()`), the job is added without one and runs as
   * any BullMQ job; a `Deadline.never()` that was cancelled is refused like
   * any deadline that has ended.
   */
  deadline?: Deadline | undefined
  /**
   * The most time a job is given, in ms: a deadline with more left is cut
   * to this (the job's stored expiry and budget both), as the ingresses cut
   * an inbound deadline to theirs. A finite number > 0, at most 2³¹−1 (cut
   * to it, as every `maxMs` of Hourglass is). Default 86 400 000 (a day).
   */
  maxMs?: number | undefined
}

/**
 * Default `maxMs`: a day. Not the ingresses' 30 s, which bounds a request
 * someone is waiting on: a job legitimately waits in a backlog, a `delay` or
 * the back-offs of several attempts for minutes or hours, and its producer
 * may be a long workflow rather than a request. Nor core's 2³¹−1 ms (24.8
 * days), which bounds only the absurd. A deadline further away than a day is
 * not one anybody waits on — it is a schedule (`delay`, a job scheduler) —
 * and a day still turns an unbounded budget (a unit slip, a value computed
 * from an untrusted header, 1e15 ms) into a bounded one. A producer whose
 * jobs need longer raises `maxMs`.
 */
const DEFAULT_MAX_MS = 86_400_000

/** The part of a BullMQ `Queue` used here. */
export interface QueueLike<DataType, ResultType, NameType extends string> {
  readonly name: string
  readonly qualifiedName: string
  readonly backend: unknown
  /** BullMQ's Queue: the options every job gets unless its own say otherwise (a `delay` among them). */
  readonly defaultJobOptions?: JobsOptions | undefined
  add(
    name: NameType,
    data: DataType,
    opts?: JobsOptions,
  ): Promise<Job<DataType, ResultType, NameType>>
}

/**
 * `queue.add(name, data, opts)`, with the deadline stored in the job
 * (`job.opts.hourglass`) as a time on the Redis server's clock, so that no
 * host's clock — the producer's or a worker's — can lengthen it.
 *
 * A deadline that has already ended is not enqueued: its reason is thrown
 * (`DeadlineExceededError`, or the cancel reason), as `createFetch` does
 * before it touches a socket. An observe-only deadline (dark mode) is stored
 * as such and refuses nothing for its time: an add enforcement would refuse
 * for it is added, and published on `refuse` with `outcome: 'observed'`
 * (a budget on trial under an enforcing deadline is bounded by that one
 * instead, see `enforcingDeadline`). A
 * cancel (the caller left) is refused in every mode. A deadline
 * with more than `maxMs` left (a day by default) gives the job `maxMs`: no
 * budget rides with a job unbounded, as none enters through an ingress
 * unbounded.
 */
export async function addWithDeadline<DataType, ResultType, NameType extends string>(
  queue: QueueLike<DataType, ResultType, NameType>,
  name: NameType,
  data: DataType,
  options: AddWithDeadlineOptions | null = {},
): Promise<Job<DataType, ResultType, NameType>> {
  // `null` is no options, as BullMQ's own `queue.add(name, data, null)`
  // takes it (destructured, it threw "Cannot destructure property 'deadline'").
  // The `hourglass` option is this call's to write, never passed through: a
  // job re-added with a failed job's options (`{ ...job.opts }`, to keep its
  // attempts and back-off) carried that job's expiry, already past, and was
  // failed unrun again when it was added with no deadline (`Deadline.never()`,
  // none in context) — not the plain job it was asked to be.
  const {
    deadline: given,
    maxMs: maxOption,
    [DEADLINE_OPTION]: _copied,
    ...opts
  } = (options ?? {}) as AddWithDeadlineOptions & { [DEADLINE_OPTION]?: unknown }
  // Checked on every call, with or without a deadline: a bad value fails
  // where it is written, not only once a deadline comes along.
  const maxMs = resolveMaxMs(maxOption)
  const asked = given === undefined ? currentDeadline() : resolveDeadline(given)
  if (!asked) return queue.add(name, data, withoutDefaultDeadline(queue, opts))
  // Under a budget on trial, the enforcing deadline above it: the job is
  // bounded (refused, stored, enforced) as it is without the trial, not
  // stored as a dark-mode job that no worker enforces.
  const deadline = enforcingDeadline(asked)
  // The delay BullMQ will apply: the job's own, else the queue's default
  // (merged as BullMQ merges them, an own `delay: undefined` included). Read
  // from `opts` alone, a queue made with `defaultJobOptions: { delay }` had
  // its jobs added to expire unrun instead of refused.
  const delay = Object.hasOwn(opts, 'delay') ? opts.delay : queue.defaultJobOptions?.delay
  // And the time BullMQ counts it from: the job's `timestamp` (its creation
  // time, merged the same way), else now. Judged from now alone, a delay
  // counted from a timestamp an hour ahead was let through and the job
  // failed unrun an hour later; one counted from a timestamp in the past,
  // due in a moment, was refused.
  const timestamp = Object.hasOwn(opts, 'timestamp')
    ? opts.timestamp
    : queue.defaultJobOptions?.timestamp
  const refusal: Refusal = { queue: queue.name, name, delay, timestamp, deadline, asked, maxMs }
  // Before the no-expiry shortcut: a cancelled Deadline.never() (the caller
  // left) has ended too, and its job must not be enqueued either.
  refuseEnded(refusal)
  // Read once, here: the job takes the deadline it was added under. A
  // deadline disposed while live reads as one that never expires (core: the
  // request is over), and one disposed while the clock was being read — a
  // fire-and-forget add, the handler's `res.end()` finishing the response
  // before TIME's reply — was read after it: Infinity left, and an expiry of
  // Infinity − Infinity that BullMQ's script refused ("Cannot serialise
  // number: must not be NaN"). The job was lost.
  const askedExpiresAt = deadline.expiresAt
  if (!Number.isFinite(askedExpiresAt)) {
    return queue.add(name, data, withoutDefaultDeadline(queue, opts))
  }
  const leftAt = (now: number): number => (deadline.expired ? 0 : Math.max(0, askedExpiresAt - now))

  // Before the clock reading, so that nothing is sent for a job refused here.
  refuseUnrunnable(refusal, Math.min(leftAt(deadline.clock.now()), maxMs))

  const key = `${queue.qualifiedName}:meta`
  // Bounded by the deadline: a Redis that does not answer (paused, or down
  // behind a client that queues commands) must not hold the producer past it.
  // Getting the client is inside the bound too: a queue that has not reached
  // Redis yet (down when the service started) waits for it to connect.
  // Under a budget on trial, bounded by the trial itself: its own time
  // passing ends no wait (observe-only), its cancel (the step abandoned)
  // does, and the enforcing deadline's expiry cancels it with that reason —
  // bounded by the enforcing one alone, a cancelled trial's add waited on a
  // hung Redis for the request's whole budget.
  const sample = await untilEnded(
    scriptClientOf(queue.backend).then((client) => readRedisTime(client, key, deadline.clock)),
    { deadline: asked },
  ).catch((error: unknown) => {
    // The deadline ended during the reading: refused as one that had ended before it.
    if ((deadline.done && error === deadline.reason) || (asked.done && error === asked.reason)) {
      throw published(refusal, 'ended', error)
    }
    throw error
  })
  refuseEnded(refusal)
  const now = deadline.clock.now()
  const remaining = leftAt(now)
  // Cut to maxMs, expiry and budget alike, from the same reading of the
  // clock: now + maxMs, not `expiresAt − (remaining − maxMs)`, which doubles
  // cannot hold next to an expiry 1e24 ms away or more (`Deadline.after(
  // Number.MAX_VALUE)`): it came out the clock's epoch, and every worker
  // failed the job unrun.
  const clamped = remaining > maxMs
  const budgetMs = Math.floor(clamped ? maxMs : remaining)
  const expiresAt = clamped ? now + maxMs : askedExpiresAt
  // Again with the budget the job is given: the reading took some of it.
  refuseUnrunnable(refusal, budgetMs)
  // BullMQ's deduplication `reschedule` keeps the delayed job it has — its
  // stored deadline with it — and moves it to this add's delay. Judged by
  // this add's deadline alone, a delay that fit here moved a job whose own
  // deadline ends first: it reached a worker after that and failed unrun (a
  // debounce that never ran), while every add resolved. Judged by that job's.
  const rescheduled = deadline.observe ? undefined : mayReschedule(opts)
  // BullMQ's reschedule reads the delay with `tonumber` (its add only a
  // number: a plain add's string delay delays nothing, and is judged so).
  const moved =
    rescheduled === undefined ? undefined : { ...refusal, delay: luaNumber(refusal.delay) }
  const wait = moved === undefined ? undefined : waitOf(moved)
  if (rescheduled !== undefined && moved !== undefined && wait !== undefined) {
    const kept = await rescheduledJob(queue, rescheduled, sample, asked)
    // A round trip: a deadline that ended meanwhile (expired, or its client
    // left) is refused, as after the clock reading, before anything is sent.
    refuseEnded(refusal)
    if (kept !== undefined && outlasts(moved, kept.leftMs)) {
      const error = unrunnable(moved, kept.leftMs, deadline.elapsed())
      error.message = `addWithDeadline: job ${JSON.stringify(name)} would reschedule job ${kept.id} (deduplication id ${JSON.stringify(rescheduled)}, reschedule) to come due in ${Math.ceil(wait)} ms, but that job has only ${Math.floor(kept.leftMs)} ms left of its own deadline: it could never run, so it is not rescheduled. To replace it with this job and this deadline, use deduplication.replace`
      throw published(moved, 'delay', error, kept.leftMs)
    }
  }
  // Dark mode: what the checks above would have refused, had they enforced.
  const observed = deadline.observe ? wouldRefuse(refusal, budgetMs) : undefined
  const stored: StoredDeadline = {
    expiresAtMs: toRedisMs(expiresAt, sample),
    budgetMs,
  }
  if (deadline.observe) stored.observe = true
  // Which add wrote the job, told back by `keptInstead`: two adds of one
  // jobId under one deadline share a clock reading (redisTime.ts) and so
  // store the same expiry and budget, and the one BullMQ kept the other's
  // was reported as added. Only where that report is made.
  const checkKept = bullmqChannels.add.hasSubscribers && mayBeDuplicate(opts)
  if (checkKept) stored.addId = randomUUID()
  if (bullmqChannels.enqueue.hasSubscribers) {
    // Where a tracer leaves its context for the worker: stored only if one did.
    const trace: Record<string, string> = {}
    bullmqChannels.enqueue.publish(() => ({
      queue: queue.name,
      name,
      deadline,
      budgetMs,
      clamped,
      trace,
    }))
    // Bounded as a worker reads it back: stored whole, the `add` message
    // handed its subscribers what the job's other messages never carry (a
    // number, a 100 KB name, a twentieth entry), and Redis kept it.
    const bounded = readTrace(trace)
    if (bounded) stored.trace = bounded
  }
  // Bounded by the deadline too: a Redis that stops answering after the clock
  // reading held the producer past it, for as long as Redis stayed away. Safe
  // to give up on: an add that lands after the deadline carries an expiry no
  // later than it (early by the reading's round trip, never late), so the
  // worker fails that job unrun. An add that reached Redis just before the
  // deadline but whose reply came after may still run, briefly, as with any
  // write whose reply is lost: the caller's deadline is over either way.
  //
  // By the expiry alone, not a cancel: a cancelled deadline (the client left)
  // keeps its expiry in the future, so an add abandoned on the cancel still
  // landed and ran with its whole budget while the producer was told it had
  // not been added. On a cancel the add is awaited, as before, and the job
  // returned. An observe-only deadline bounds nothing.
  const adding = queue.add(name, data, { ...opts, [DEADLINE_OPTION]: stored } as JobsOptions)
  const job = deadline.observe ? await adding : await untilExpiry(adding, deadline)

  // A job with the same id kept by BullMQ (`jobId`, a deduplication id):
  // reported as what it is, not as the budget this call would have given
  // it. Read back only for a subscriber, and only when an id was given.
  const kept =
    checkKept && job.id !== undefined
      ? await keptInstead(queue.backend, `${queue.qualifiedName}:${job.id}`, stored, deadline)
      : undefined
  bullmqChannels.add.publish(() => {
    const common = {
      jobId: job.id ?? '',
      queue: queue.name,
      name,
      clockErrorMs: sample.receivedAt - sample.sentAt,
    }
    if (kept) {
      const other = kept.deadline
      return {
        ...common,
        budgetMs: other?.budgetMs,
        clamped: false,
        remainingMs: other
          ? Math.max(0, Math.floor(toLocalMs(other.expiresAtMs, sample) - deadline.clock.now()))
          : Number.POSITIVE_INFINITY,
        expiresAtMs: other?.expiresAtMs,
        observe: other?.observe === true,
        duplicate: true,
        ...(other?.trace ? { trace: other.trace } : {}),
      }
    }
    return {
      ...common,
      budgetMs,
      clamped,
      remainingMs: Math.max(0, Math.floor(expiresAt - deadline.clock.now())),
      expiresAtMs: stored.expiresAtMs,
      observe: deadline.observe,
      duplicate: false,
      ...(stored.trace ? { trace: stored.trace } : {}),
    }
  })
  if (observed) publishObserved(refusal, observed, job)
  // Its `changeDelay` judged as its `delay` was. A job BullMQ kept instead
  // (read back above) is judged by its own deadline, or not at all.
  const other = kept ? kept.deadline : stored
  if (other && !other.observe) {
    const otherExpiresAt = kept ? toLocalMs(other.expiresAtMs, sample) : expiresAt
    guardChangeDelay(job, refusal, otherExpiresAt)
  }
  return job
}

/**
 * `opts` for a job added without a deadline, over a queue whose
 * `defaultJobOptions` hold an `hourglass` option (a queue made with a
 * failed job's options, `{ ...job.opts }`): BullMQ merges those into every
 * job whose own options do not say otherwise, and the job took their expiry,
 * already past — failed unrun as reaching a worker after a deadline it was
 * never given. Said otherwise here (`undefined`, which the stored job drops);
 * `opts` as they are for any other queue.
 */
function withoutDefaultDeadline(
  queue: { readonly defaultJobOptions?: JobsOptions | undefined },
  opts: JobsOptions,
): JobsOptions {
  const defaults = queue.defaultJobOptions
  if (defaults == null || !Object.hasOwn(defaults, DEADLINE_OPTION)) return opts
  return { ...opts, [DEADLINE_OPTION]: undefined } as JobsOptions
}

/**
 * The job `addWithDeadline` returns: its `changeDelay(ms)` (BullMQ's: the
 * job is due `ms` from now, whatever its `timestamp`) refused, as a `delay`
 * that long is refused at the add, when the job would be due at or after
 * its deadline — it could never run, and the worker would fail it unrun
 * then. Passed on, `changeDelay(60_000)` on a job with 5 s left was
 * accepted, and the producer learnt of it a minute later from the job's
 * failure, if at all. Rejects with the add's `DeadlineExceededError` (its
 * message naming `changeDelay`), and the job keeps its delay. Judged
 * against the job's own expiry on the producer's clock (`expiresAtMs`, the
 * deadline's `maxMs` cut included), not the deadline's, which may have
 * been released since (a request that has ended).
 */
function guardChangeDelay(job: Job, refusal: Refusal, expiresAt: number): void {
  const original = job.changeDelay
  if (typeof original !== 'function') return
  const { deadline } = refusal
  job.changeDelay = function changeDelay(this: Job, delay: number): Promise<void> {
    const left = Math.max(0, expiresAt - deadline.clock.now())
    // BullMQ's script reads the delay with `tonumber`: '60000' is a minute there.
    const asked = {
      ...refusal,
      delay: luaNumber(delay),
      timestamp: undefined,
    }
    if (outlasts(asked, left)) {
      return Promise.reject(unrunnable(asked, left, deadline.elapsed(), job.id ?? ''))
    }
    return original.call(this, delay)
  }
}

/**
 * A job delayed for at least the time it is given can never run: it reaches
 * a worker after its deadline, which fails it unrun. Enqueued, that was a
 * silent loss found hours later — typically a reminder scheduled from a
 * request handler, which took the request's 30 s by default. Refused as
 * fetch and gRPC refuse a call with too little time to start: a deadline
 * error, so a retry under the same deadline is not attempted. The message
 * names the fix. Dark mode refuses nothing: the job is added, and `refuse`
 * says `observed` (see `wouldRefuse`); the worker reports it too.
 */
function refuseUnrunnable(refusal: Refusal, budgetMs: number): void {
  if (refusal.deadline.observe || !outlasts(refusal, budgetMs)) return
  throw published(
    refusal,
    'delay',
    unrunnable(refusal, budgetMs, refusal.deadline.elapsed()),
    budgetMs,
  )
}

/** A `delay` that ends at least `budgetMs` from now: the job would reach a worker after its deadline. */
function outlasts(refusal: Pick<Refusal, 'delay' | 'timestamp'>, budgetMs: number): boolean {
  const wait = waitOf(refusal)
  return wait !== undefined && wait > 0 && wait >= budgetMs
}

/**
 * How long from now the job's `delay` keeps it from running, on this host's
 * wall clock, as BullMQ counts it: a job is due at `timestamp + delay`, its
 * `timestamp` being the option when given (truthy), else `Date.now()`
 * (Job's constructor), and a `delay` that is not > 0 is none. Undefined for
 * no delay.
 */
function waitOf({ delay, timestamp }: Pick<Refusal, 'delay' | 'timestamp'>): number | undefined {
  if (typeof delay !== 'number' || !(delay > 0)) return undefined
  // A numeric string is a timestamp to BullMQ's scripts (`tonumber`): a delay
  // counted from `String(Date.now() + 60_000)` ends in a minute there.
  const from = luaNumber(timestamp)
  if (typeof from !== 'number' || !from) return delay
  return from + delay - Date.now()
}

/** What `refuseUnrunnable` throws: the message names the delay, what was left and the fix. */
function unrunnable(
  refusal: Refusal,
  budgetMs: number,
  elapsedMs: number,
  changedJobId?: string,
): DeadlineExceededError {
  const { name, delay, timestamp, deadline } = refusal
  const wait = waitOf(refusal) ?? 0
  // A delay counted from a timestamp is not what it seems: say when it ends.
  const counted =
    wait === delay
      ? ''
      : ` counted from its timestamp (${timestamp}), due in ${Math.ceil(wait)} ms,`
  const error = new DeadlineExceededError({
    budgetMs: deadline.budgetMs,
    elapsedMs,
    slice: deadline.name,
  })
  const left = Math.max(0, Math.floor(budgetMs))
  error.message =
    changedJobId === undefined
      ? `addWithDeadline: job ${JSON.stringify(name)} has a delay of ${delay} ms${counted} but only ${left} ms left of its deadline (at most maxMs): it could never run, so it is not added. To schedule it past this deadline, give it its own ({ deadline: Deadline.after(ms) }) or none (Deadline.never())`
      : `job.changeDelay: job ${JSON.stringify(name)} (id ${changedJobId}) was asked for a delay of ${delay} ms but has only ${left} ms left of its deadline: it could never run, so its delay is not changed. To run it past this deadline, add it again under its own ({ deadline: Deadline.after(ms) }) or none (Deadline.never())`
  // The job's own schedule did not fit, not the deadline that ran out: with
  // the deadline's time still there (more than the largest reserve), an
  // unrelated deadline's expiry (fromJobError's rule), so an Express
  // handler's `next(error)` is the app's 500 — not 504 `x-deadline-expired`
  // and an `expire` for a request 3 ms into its 2 s. Unmarked, core counted
  // it the caller's own. Near its end, the deadline's own (a client's
  // refusal for lack of its budget): the request's expiry when it is the
  // request's, or a slice of it.
  const judged = asOwnOrForeignExpiry(markExpiryOf(error, deadline), deadline)
  // A bug, not a timeout: its prototype's 504 made Express's own final
  // handler (and the `err.status ?? 500` handler core's README shows)
  // answer `504 Gateway Timeout` for a schedule that could never fit.
  if (isForeignExpiry(judged)) {
    ;(judged as { status: number }).status = 500
    ;(judged as { statusCode: number }).statusCode = 500
  }
  return judged
}

/** A job about to be refused: what `refuse` reports of it. */
interface Refusal {
  queue: string
  name: string
  delay: unknown
  /** The job's `timestamp` option (BullMQ counts its delay from it), as given. */
  timestamp: unknown
  deadline: Deadline
  /**
   * The deadline the add was asked under, when it is a budget on trial
   * bounded by `deadline` above it (`enforcingDeadline`): its cancel (the
   * step abandoned) still refuses the add, as a cancel does in every mode.
   */
  asked: Deadline
  maxMs: number
}

/**
 * A deadline that has ended — expired, or cancelled — : its reason is
 * thrown, nothing is added. In dark mode only the expiry is observed: a
 * cancel (the caller left) ends the work in every mode, as it does in
 * `deadline()` and core (`throwIfExpired` throws a cancel's reason whatever
 * the mode).
 */
function refuseEnded(refusal: Refusal): void {
  try {
    refusal.deadline.throwIfExpired()
    // A trial's own time passing throws nothing (observe-only); its cancel does.
    if (refusal.asked !== refusal.deadline) refusal.asked.throwIfExpired()
  } catch (error) {
    throw published(refusal, 'ended', error)
  }
}

/**
 * `error`, once `refuse` has reported it: a refused job was seen by nobody
 * but its producer (no worker's `expire` comes for a job never added), so
 * no metric rose for it.
 */
function published(
  refusal: Refusal,
  reason: BullmqRefusal['reason'],
  error: unknown,
  remainingMs = 0,
): unknown {
  bullmqChannels.refuse.publish(() => ({
    ...refusalFields(refusal, reason, remainingMs, error),
    outcome: 'refused',
  }))
  return error
}

/** What `refuse` says of a job, observed or refused alike. */
function refusalFields(
  refusal: Refusal,
  reason: BullmqRefusal['reason'],
  remainingMs: number,
  error: unknown,
): BullmqRefusal {
  const { queue, name, deadline } = refusal
  // The delay that applies, as the refusal's message counts it: from the
  // job's `timestamp`. The `delay` as given said 500 ms of a job due in a
  // minute (a refusal under a 5 s deadline that read as a delay that fit),
  // and 10 s of one due in a moment.
  const wait = waitOf(refusal)
  return {
    queue,
    name,
    deadline,
    reason,
    delayMs: wait === undefined ? undefined : Math.max(0, Math.ceil(wait)),
    remainingMs: Math.max(0, Math.floor(remainingMs)),
    error,
  }
}

/** What enforcement would have refused an add for, read when it would have checked. */
interface WouldRefuse {
  reason: BullmqRefusal['reason']
  remainingMs: number
  /** Made only for a subscriber: an error captures a stack. */
  error: () => unknown
}

/**
 * Under an observe-only deadline, which refuses nothing for its time: what
 * `refuseEnded` and `refuseUnrunnable` would have refused the add for had
 * it enforced (expired first, as they check), or undefined when it fits. Dark mode is
 * where an operator learns which adds enforcing will refuse: silent here,
 * they found out only once it refused them.
 */
function wouldRefuse(refusal: Refusal, budgetMs: number): WouldRefuse | undefined {
  const { deadline } = refusal
  // An observed expiry aborted nothing and left no reason (a cancel was
  // refused by `refuseEnded` in every mode).
  if (deadline.expired) {
    const { budgetMs: budget, name: slice } = deadline
    // As core's expiry makes it: the whole budget spent, at least.
    const elapsedMs = Math.max(deadline.elapsed(), budget)
    return {
      reason: 'ended',
      remainingMs: 0,
      error: () => new DeadlineExceededError({ budgetMs: budget, elapsedMs, slice }),
    }
  }
  if (!outlasts(refusal, budgetMs)) return undefined
  const elapsedMs = deadline.elapsed()
  return {
    reason: 'delay',
    remainingMs: budgetMs,
    error: () => unrunnable(refusal, budgetMs, elapsedMs),
  }
}

/**
 * `refuse`, `outcome: 'observed'`: the add went ahead (dark mode) but
 * enforcement would have refused it. After the add, so as to name the job.
 */
function publishObserved(
  refusal: Refusal,
  observed: WouldRefuse,
  job: { id?: string | undefined },
): void {
  bullmqChannels.refuse.publish(() => ({
    ...refusalFields(refusal, observed.reason, observed.remainingMs, observed.error()),
    outcome: 'observed',
    jobId: job.id ?? '',
  }))
}

/**
 * The `deadline` option: a core `Deadline` (of any installed copy), or
 * `null` for none, as JavaScript callers write it. A number of ms, a `Date`
 * or an epoch time where the Deadline belongs failed as "deadline.throwIfExpired
 * is not a function", and a `0` was taken for no deadline at all: the job
 * was enqueued unbounded. Refused, naming what was given.
 */
function resolveDeadline(value: unknown): Deadline | undefined {
  if (value === null) return undefined
  if (!isDeadline(value)) {
    throw new TypeError(
      `addWithDeadline: deadline must be a Deadline from @hourglass/core (Deadline.after(ms)), got ${describeValue(value)}`,
    )
  }
  return value
}

/**
 * `maxMs` as every ingress checks its own (core's resolveIngressOptions): a
 * finite number > 0, cut to 2³¹−1; a `TypeError` for a value of the wrong
 * type, a `RangeError` for one out of range, the value shown as every
 * package shows one (core's describeValue).
 */
function resolveMaxMs(value: number | undefined): number {
  // `null` is the default, as it is for a worker's maxMs (withDeadline) and an
  // ingress's: a config read from JSON has no `undefined`.
  if (value === undefined || value === null) return DEFAULT_MAX_MS
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw optionError('addWithDeadline: maxMs', 'a finite number of ms > 0', value)
  }
  return Math.min(value, MAX_TIMER_MS)
}

/**
 * `work`, unless `deadline`'s expiry comes first (then the deadline's own
 * reason): a cancel of `deadline` does not end the wait; its timer is
 * released as soon as `work` settles.
 *
 * core's `outcomeWithin` on the deadline's clock, not a `Deadline` of its own: that
 * one was published as any deadline is, a `hourglass:deadline:create` and,
 * once the add was in, a `hourglass:deadline:cancel` (an AbortError) for
 * every job added — a subscriber counting cancels (callers that left) counted
 * one per job. And a create subscriber that sheds new deadlines (a load
 * shedder) cancelled it: the add rejected with the shed's reason while the
 * job went on into Redis and ran, and a producer that retried on that
 * rejection added it twice.
 */
async function untilExpiry<T>(work: Promise<T>, deadline: Deadline): Promise<T> {
  const outcome = await outcomeWithin(work, Math.max(0, deadline.remaining()), {
    clock: deadline.clock,
  })
  if (outcome !== undefined) {
    if (outcome.ok) return outcome.value
    throw outcome.error
  }
  // The deadline's own timer, armed first for the same instant, has fired
  // (or is late: this expires it): its reason names its slice and budget. A
  // cancel meanwhile is thrown here too, now that its time is up.
  deadline.throwIfExpired()
  // Disposed meanwhile (it no longer expires): its time is up all the same.
  throw expiryError(deadline)
}
