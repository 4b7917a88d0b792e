/**
 * Whole milliseconds as a `grpc-timeout` value, in gRPC's own format: at
 * most 8 digits and a unit (the spec's TimeoutValue; a reader refuses more,
 * and grpc-js's server reads a longer one wrapped). Below 10^8 ms, in ms;
 * from there, in whole seconds rounded down — never more than is left — as
 * @hourglass/grpc writes one (its `metadataHeaders`). `ms` is at most
 * 2^31-1 (what `writeDeadline` writes), so 7 digits of seconds at most.
 */
export function grpcTimeoutValue(ms: number): string {
  return ms < 1e8 ? `${ms}m` : `${Math.floor(ms / 1000)}S`
}
