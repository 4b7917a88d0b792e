import {
  ATTR_RPC_GRPC_STATUS_CODE,
  ATTR_RPC_METHOD,
  ATTR_RPC_SERVICE,
  ATTR_RPC_STATUS_CODE,
  ATTR_RPC_SYSTEM,
  ATTR_RPC_SYSTEM_NAME,
} from './attributes.js'

/** Which RPC conventions the gRPC spans and metrics carry: the older ones, the stable ones, or both. */
export interface RpcConventions {
  old: boolean
  stable: boolean
}

/**
 * Read `OTEL_SEMCONV_STABILITY_OPT_IN` as the RPC conventions ask of an
 * instrumentation that emitted their older version: `rpc` = the stable ones
 * only, `rpc/dup` (which wins over `rpc`) = both, anything else = the older
 * ones, as before. Read when the handlers are made (at `enable()`), as
 * OpenTelemetry's own instrumentations read it at construction.
 */
export function rpcConventions(
  optIn: string | undefined = process.env.OTEL_SEMCONV_STABILITY_OPT_IN,
): RpcConventions {
  const values = new Set((optIn ?? '').split(',').map((value) => value.trim().toLowerCase()))
  if (values.has('rpc/dup')) return { old: true, stable: true }
  if (values.has('rpc')) return { old: false, stable: true }
  return { old: true, stable: false }
}

/** `/package.Service/Method` → `package.Service/Method`: the span name and the stable `rpc.method`. */
export function fullMethod(path: string): string {
  return path.startsWith('/') ? path.slice(1) : path
}

/**
 * The call's RPC attributes. Older: `rpc.system`, `rpc.service` and the
 * method's short name in `rpc.method`. Stable: `rpc.system.name` and the
 * fully-qualified `rpc.method`, which, under `rpc/dup`, is the one written:
 * one attribute cannot carry both meanings.
 */
export function rpcAttributes(
  path: string,
  conventions: RpcConventions = rpcConventions(),
): Record<string, string> {
  const name = fullMethod(path)
  const slash = name.lastIndexOf('/')
  const attributes: Record<string, string> = {}
  if (conventions.old) {
    attributes[ATTR_RPC_SYSTEM] = 'grpc'
    if (slash === -1) attributes[ATTR_RPC_METHOD] = name
    else {
      attributes[ATTR_RPC_SERVICE] = name.slice(0, slash)
      attributes[ATTR_RPC_METHOD] = name.slice(slash + 1)
    }
  }
  if (conventions.stable) {
    attributes[ATTR_RPC_SYSTEM_NAME] = 'grpc'
    attributes[ATTR_RPC_METHOD] = name
  }
  return attributes
}

/**
 * The stable conventions only: the RPC call duration metrics' attributes,
 * whatever the opt-in. Their names are the stable ones, which Hourglass never
 * emitted with older attributes, so there is nothing to keep; and `rpc/dup`
 * means, for a metric, the older metric (`rpc.client.duration`, in ms, which
 * Hourglass never had) beside the stable one, each with its own attributes —
 * as OpenTelemetry's HTTP instrumentation records its two durations.
 */
export const STABLE_RPC: RpcConventions = { old: false, stable: true }

/** The status that ended the call: numeric `rpc.grpc.status_code` (older), its name in `rpc.status_code` (stable). */
export function rpcStatusAttributes(
  code: number,
  conventions: RpcConventions,
): Record<string, string | number> {
  const attributes: Record<string, string | number> = {}
  if (conventions.old) attributes[ATTR_RPC_GRPC_STATUS_CODE] = grpcStatusCode(code)
  if (conventions.stable) attributes[ATTR_RPC_STATUS_CODE] = grpcStatusName(code)
  return attributes
}

/**
 * The gRPC status a code stands for: itself when gRPC defines it (0–16),
 * else UNKNOWN (2), as gRPC's status-code guidance says of any other value.
 * grpc-js sends whatever integer a handler's error carries as `code` (a
 * MongoServerError's 11000) and its client hands it on as it came; kept as
 * it is, each such code was a series of its own and, on a server, a success.
 */
export function grpcStatusCode(code: number): number {
  return Number.isInteger(code) && code >= 0 && code < STATUS_NAMES.length ? code : UNKNOWN
}

/**
 * The call's `error.type` when its status makes it an error, else
 * undefined. On the client every status but OK is (the caller did not get
 * what it asked for); on the server only those the gRPC conventions count
 * as the server's failure — UNKNOWN, DEADLINE_EXCEEDED, UNIMPLEMENTED,
 * INTERNAL, UNAVAILABLE, DATA_LOSS —, the rest being the caller's.
 */
export function grpcErrorType(code: number, side: 'client' | 'server'): string | undefined {
  const status = grpcStatusCode(code)
  const failed = side === 'client' ? status !== 0 : SERVER_ERRORS.has(status)
  return failed ? grpcStatusName(status) : undefined
}

const UNKNOWN = 2

const SERVER_ERRORS = new Set([2, 4, 12, 13, 14, 15])

const STATUS_NAMES = [
  'OK',
  'CANCELLED',
  'UNKNOWN',
  'INVALID_ARGUMENT',
  'DEADLINE_EXCEEDED',
  'NOT_FOUND',
  'ALREADY_EXISTS',
  'PERMISSION_DENIED',
  'RESOURCE_EXHAUSTED',
  'FAILED_PRECONDITION',
  'ABORTED',
  'OUT_OF_RANGE',
  'UNIMPLEMENTED',
  'INTERNAL',
  'UNAVAILABLE',
  'DATA_LOSS',
  'UNAUTHENTICATED',
]

/** A gRPC status code's name (`DEADLINE_EXCEEDED`); `UNKNOWN` for one gRPC does not define (see `grpcStatusCode`). */
export function grpcStatusName(code: number): string {
  return STATUS_NAMES[grpcStatusCode(code)] ?? 'UNKNOWN'
}
