import { nonNegative } from './validateMs.js'

/** Options of the client `deadlineInterceptor()`. */
export interface ClientDeadlineOptions {
  /**
   * Kept back from the caller's deadline for handling the answer, in ms:
   * each call gets `min(its own deadline, remaining − reserveMs)`. Default 0
   * (an ingress such as `deadline()` already keeps its own reserve to answer).
   */
  reserveMs?: number | undefined
  /**
   * With less than this left (after `reserveMs`), fail at once with
   * `DEADLINE_EXCEEDED` without sending anything. Default 5, like
   * @hourglass/fetch. 0 = only when nothing at all is left.
   */
  minBudgetMs?: number | undefined
}

export interface ResolvedClientOptions {
  reserveMs: number
  minBudgetMs: number
}

export function resolveClientOptions(options: ClientDeadlineOptions): ResolvedClientOptions {
  return {
    reserveMs: nonNegative('reserveMs', options.reserveMs ?? 0),
    minBudgetMs: nonNegative('minBudgetMs', options.minBudgetMs ?? 5),
  }
}
