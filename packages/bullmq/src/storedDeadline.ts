/**
 * The job option the deadline rides in. BullMQ stores options it does not
 * know as given and hands them back to the worker, across retries and
 * stalls: the deadline travels with the job, not with its data.
 */
export const DEADLINE_OPTION = 'hourglass'

/** What a job carries (`job.opts.hourglass`). */
export interface StoredDeadline {
  /**
   * When the job's time runs out, in ms on the Redis server's clock (`TIME`).
   * Not the producer's clock: see redisTime.ts for why and for the error bound.
   */
  expiresAtMs: number
  /** The time the job was given when it was added, in ms. */
  budgetMs: number
  /** The producer's deadline was observe-only (dark mode): report, never enforce. */
  observe?: true
  /**
   * The trace context of the code that added the job (`traceparent`,
   * `tracestate`, …), when a tracer put it there through the `enqueue`
   * channel: the worker's messages hand it back, so the job's span joins the
   * producer's trace.
   */
  trace?: Record<string, string>
  /**
   * Which `addWithDeadline` call wrote it, when one reports whether BullMQ
   * kept another job under its id (`keptInstead`); a worker ignores it.
   */
  addId?: string
}

/** A trace context is a few short strings: a `tracestate` is at most 512 characters, its name far less. */
const MAX_TRACE_ENTRIES = 8
const MAX_TRACE_VALUE = 512

/**
 * What a worker reads back from a job: `budgetMs` is undefined when the job
 * recorded none (another producer wrote the option, or a hand-written one).
 */
export interface ReadDeadline extends Omit<StoredDeadline, 'budgetMs'> {
  budgetMs: number | undefined
}

/** What is wrong with a job's stored deadline: which part, the value read there, and why it is refused. */
export interface MalformedDeadline {
  /** `hourglass`: the option itself is not an object; else the field that is malformed. */
  field: 'hourglass' | 'expiresAtMs' | 'budgetMs'
  /** The value as read from the job (may be anything another writer put there). */
  value: unknown
  reason: string
}

/**
 * The deadline stored in a job's options, or undefined when there is none.
 * A job's options come from whoever could write to Redis: a malformed value
 * is treated as no deadline rather than failing the job, and handed to
 * `onMalformed` (the worker reports it on `hourglass:bullmq:invalid`).
 * Malformed is an option that is not an object, or an `expiresAtMs`, or a
 * `budgetMs` that is present, that is not a finite number ≥ 0 (a string,
 * null, a negative, the Infinity JSON.parse makes of 1e400). A missing
 * `budgetMs` is not malformed: the worker bounds such a job itself. Nor is
 * an option that is absent or `null`: that is a job without a deadline.
 */
export function readStoredDeadline(
  opts: unknown,
  onMalformed?: (problem: MalformedDeadline) => void,
): ReadDeadline | undefined {
  const stored = (opts as Record<string, unknown> | undefined)?.[DEADLINE_OPTION]
  if (stored === undefined || stored === null) return undefined
  // An array is no record of fields either: reported as a missing
  // `expiresAtMs`, it sent the reader looking for one field of an object
  // that was never there.
  if (typeof stored !== 'object' || Array.isArray(stored)) {
    onMalformed?.({ field: DEADLINE_OPTION, value: stored, reason: 'not an object' })
    return undefined
  }
  const { expiresAtMs, budgetMs, observe } = stored as Record<string, unknown>
  if (!isTime(expiresAtMs)) {
    onMalformed?.({ field: 'expiresAtMs', value: expiresAtMs, reason: notATime(expiresAtMs) })
    return undefined
  }
  // A budget that is there but unreadable means the writer got the format
  // wrong, and its expiry is no more trustworthy: the whole deadline is
  // unusable, as with a malformed expiry.
  if (budgetMs !== undefined && !isTime(budgetMs)) {
    onMalformed?.({ field: 'budgetMs', value: budgetMs, reason: notATime(budgetMs) })
    return undefined
  }
  const read: ReadDeadline = { expiresAtMs, budgetMs }
  if (observe === true) read.observe = true
  const trace = readTrace((stored as Record<string, unknown>).trace)
  if (trace) read.trace = trace
  return read
}

/** A stored time or duration in ms: a finite number, not before 0. */
function isTime(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0
}

function notATime(value: unknown): string {
  return value === undefined ? 'missing' : 'not a finite number ≥ 0'
}

/**
 * String entries only, a few and short — key and value alike; anything else
 * is dropped (it is only telemetry). What a worker reads back, and what the
 * producer stores and reports (addWithDeadline) too. Bounded by the value alone, a key of
 * any length (100 KB, from whoever can write to Redis) rode on every message
 * of every attempt of the job.
 */
export function readTrace(value: unknown): Record<string, string> | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined
  const trace: Record<string, string> = {}
  let entries = 0
  for (const [key, entry] of Object.entries(value)) {
    if (typeof entry !== 'string' || entry.length > MAX_TRACE_VALUE) continue
    if (key.length > MAX_TRACE_VALUE) continue
    trace[key] = entry
    if (++entries === MAX_TRACE_ENTRIES) break
  }
  return entries > 0 ? trace : undefined
}
