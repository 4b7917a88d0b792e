/** The header Hourglass writes: the whole milliseconds left when the request is sent. */
export const DEADLINE_HEADER = 'x-deadline-remaining-ms'
/** Set on a 504 caused by the deadline: the caller's budget is gone too, so it must not retry. */
export const DEADLINE_EXPIRED_HEADER = 'x-deadline-expired'
/** gRPC's timeout header (1–8 digits and a unit), accepted inbound. */
export const GRPC_TIMEOUT_HEADER = 'grpc-timeout'
/** Envoy's per-request timeout, accepted inbound. */
export const ENVOY_TIMEOUT_HEADER = 'x-envoy-expected-rq-timeout-ms'

/** Inbound sources `readDeadline` understands, in the order it reads them. */
export const DEADLINE_SOURCES = [
  DEADLINE_HEADER,
  GRPC_TIMEOUT_HEADER,
  ENVOY_TIMEOUT_HEADER,
] as const
export type DeadlineSource = (typeof DEADLINE_SOURCES)[number]
