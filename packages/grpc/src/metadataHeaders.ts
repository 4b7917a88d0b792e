import type { Deadline as GrpcDeadline, Metadata } from '@grpc/grpc-js'
import { GRPC_TIMEOUT_HEADER, grpcTimeoutValue } from '@hourglass/core'

/**
 * An inbound call's deadline sources as headers core's `readDeadline` reads,
 * so `trust`, clamping, "the smallest valid value wins" and the reported
 * `source` work exactly as under Express.
 *
 * grpc-js parses `grpc-timeout` itself (answering `INTERNAL` when it is
 * malformed), removes it from the metadata and keeps only the absolute
 * `call.getDeadline()`. That is turned back into a `grpc-timeout` of the whole
 * milliseconds left at `arrivedWallMs`, when the call arrived — the same
 * process and wall clock that set it, so no skew enters — as relative as
 * the other values, which are read as they came; a header sent twice is
 * joined with `, ` and rejected as repeated.
 */
export function metadataHeaders(
  metadata: Metadata,
  grpcDeadline: GrpcDeadline,
  arrivedWallMs: number,
): { get(name: string): string | null } {
  const at = grpcDeadline instanceof Date ? grpcDeadline.getTime() : grpcDeadline
  const grpcMs = Number.isFinite(at) ? Math.max(0, Math.floor(at - arrivedWallMs)) : undefined
  return {
    get(name: string): string | null {
      if (name === GRPC_TIMEOUT_HEADER)
        return grpcMs === undefined ? null : grpcTimeoutValue(grpcMs)
      const values = metadata.get(name)
      if (values.length === 0) return null
      return values.map((value) => (typeof value === 'string' ? value : '(binary)')).join(', ')
    },
  }
}
