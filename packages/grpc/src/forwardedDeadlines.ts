import type { Metadata } from '@grpc/grpc-js'
import { GRPC_TIMEOUT_HEADER, KNOWN_DEADLINE_SOURCES } from '@hourglass/core'

/**
 * The deadline sources a server reads from metadata: `x-deadline-remaining-ms`,
 * Envoy's `x-envoy-expected-rq-timeout-ms` and an SDK's `x-stainless-timeout`
 * (`grpc-timeout` is grpc-js's own, written from the call's deadline).
 */
const DEADLINE_METADATA = KNOWN_DEADLINE_SOURCES.filter((name) => name !== GRPC_TIMEOUT_HEADER)

/**
 * @internal `metadata` without the deadline values it came with, for a call
 * whose deadline the client interceptor decides: the same object when it
 * carries none, else a copy (a `Metadata` may be the caller's own, or
 * shared by calls). A handler that forwards its inbound metadata
 * (`client.method(request, call.metadata, …)`) forwards its caller's
 * deadline headers too, stale: a Hourglass server trusts Envoy's by
 * default and takes the smallest, so the edge's route timeout cut a call
 * exempted with `Deadline.never()`, or given a longer deadline of the
 * caller's, to that budget.
 */
export function withoutForwardedDeadlines(metadata: Metadata): Metadata {
  if (DEADLINE_METADATA.every((name) => metadata.get(name).length === 0)) return metadata
  const copy = metadata.clone()
  for (const name of DEADLINE_METADATA) copy.remove(name)
  return copy
}

/**
 * @internal `metadata` (the caller's, `callers`, or a copy of it already)
 * without a `grpc-timeout` it came with, for a call given no gRPC deadline
 * (exempted with `Deadline.never()`, dark mode, a deadline beyond 2^31-1 ms,
 * a response stream under a deadline with no expiry). grpc-js writes
 * `grpc-timeout` from the call's gRPC deadline over the metadata's, but a
 * call with none sent the caller's as given (a bridge copying a gRPC-web
 * request's headers into its `Metadata`), and grpc-js's server enforced it:
 * the call was cut to that stale budget. Only on this path: a call with a
 * gRPC deadline has the value overwritten, at no cost here.
 */
export function withoutForwardedGrpcTimeout(metadata: Metadata, callers: Metadata): Metadata {
  if (metadata.get(GRPC_TIMEOUT_HEADER).length === 0) return metadata
  const copy = metadata === callers ? metadata.clone() : metadata
  copy.remove(GRPC_TIMEOUT_HEADER)
  return copy
}
