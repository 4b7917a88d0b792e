import { MAX_TIMER_MS, optionError } from '@hourglass/core'

// Options are validated when an interceptor is created, with a message that
// names the interceptor and the field (`deadlineInterceptor: reserveMs`).

/**
 * ≥ 0 and under 2³¹−1 ms: no deadline gRPC carries is longer (grpc-js's
 * server reads a longer `grpc-timeout` wrapped; an ingress's `maxMs` is cut
 * to it), so a reserve or a minimum budget that large refuses every call —
 * a timestamp where a duration belongs (`Date.now()`), not a setting.
 */
export function underWireMax(name: string, value: number): number {
  if (typeof value !== 'number' || !(value >= 0) || value >= MAX_TIMER_MS) {
    throw optionError(name, `a number of ms ≥ 0 and < ${MAX_TIMER_MS} (2³¹−1)`, value)
  }
  return value
}

/** > 0 and at most 2^31−1 ms (the longest `grpc-timeout` grpc-js's server reads), or Infinity for none. */
export function positiveOrNone(name: string, value: number): number {
  if (value === Number.POSITIVE_INFINITY) return value
  if (typeof value !== 'number' || !(value > 0) || value > MAX_TIMER_MS) {
    throw optionError(name, `a number of ms > 0 and ≤ ${MAX_TIMER_MS}, or Infinity for none`, value)
  }
  return value
}
