import { MAX_TIMER_MS } from './clock.js'

/**
 * Whole milliseconds as a `grpc-timeout` value, in gRPC's own format: at
 * most 8 digits and a unit (the spec's TimeoutValue; a reader refuses more,
 * and grpc-js's server reads a longer one wrapped). Below 10^8 ms, in ms;
 * from there, in whole seconds rounded down — never more than is left.
 * Capped at 2^31-1 ms (what `writeDeadline` writes; readers clamp to their
 * own `maxMs`), so 7 digits of seconds at most. Written by @hourglass/fetch
 * over a caller's `grpc-timeout` and by @hourglass/grpc when it hands an
 * inbound call's deadline to `readDeadline`.
 */
export function grpcTimeoutValue(ms: number): string {
  // Whole ms, none below 0: a fraction or a sign is no TimeoutValue ('1.5m'
  // is refused by every reader), and NaN is read as nothing left.
  const capped = Math.min(Math.max(0, Math.floor(ms)) || 0, MAX_TIMER_MS)
  return capped < 1e8 ? `${capped}m` : `${Math.floor(capped / 1000)}S`
}
