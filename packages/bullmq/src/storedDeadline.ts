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
}

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
  return observe === true
    ? { expiresAtMs, budgetMs: Math.max(0, budget), observe: true }
    : { expiresAtMs, budgetMs: Math.max(0, budget) }
}
