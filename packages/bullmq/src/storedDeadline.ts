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
}

/** A trace context is a few short strings: a `tracestate` is at most 512 characters. */
const MAX_TRACE_ENTRIES = 8
const MAX_TRACE_VALUE = 512

/**
 * The deadline stored in a job's options, or undefined when there is none.
 * A job's options come from whoever could write to Redis: a malformed value
 * is treated as no deadline rather than failing the job.
 */
export function readStoredDeadline(opts: unknown): StoredDeadline | undefined {
  const stored = (opts as Record<string, unknown> | undefined)?.[DEADLINE_OPTION]
  if (typeof stored !== 'object' || stored === null) return undefined
  const { expiresAtMs, budgetMs, observe } = stored as Record<string, unknown>
  if (typeof expiresAtMs !== 'number' || !Number.isFinite(expiresAtMs)) return undefined
  const budget = typeof budgetMs === 'number' && Number.isFinite(budgetMs) ? budgetMs : 0
  const read: StoredDeadline = { expiresAtMs, budgetMs: Math.max(0, budget) }
  if (observe === true) read.observe = true
  const trace = readTrace((stored as Record<string, unknown>).trace)
  if (trace) read.trace = trace
  return read
}

/** String entries only, a few and short; anything else is dropped (it is only telemetry). */
function readTrace(value: unknown): Record<string, string> | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined
  const trace: Record<string, string> = {}
  let entries = 0
  for (const [key, entry] of Object.entries(value)) {
    if (typeof entry !== 'string' || entry.length > MAX_TRACE_VALUE) continue
    trace[key] = entry
    if (++entries === MAX_TRACE_ENTRIES) break
  }
  return entries > 0 ? trace : undefined
}
