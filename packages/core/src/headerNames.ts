/** The header Hourglass writes: the whole milliseconds left when the request is sent. */
export const DEADLINE_HEADER = 'x-deadline-remaining-ms'
/** Set on a 504 caused by the deadline: the caller's budget is gone too, so it must not retry. */
export const DEADLINE_EXPIRED_HEADER = 'x-deadline-expired'
/** gRPC's timeout header (1–8 digits and a unit), accepted inbound. */
export const GRPC_TIMEOUT_HEADER = 'grpc-timeout'
/** Envoy's per-request timeout, accepted inbound. */
export const ENVOY_TIMEOUT_HEADER = 'x-envoy-expected-rq-timeout-ms'
/**
 * The per-attempt timeout the Stainless-generated SDKs (openai-node,
 * anthropic-sdk-typescript…) send, in whole seconds: openai-node 6.x sends
 * it only for a timeout given per request, not for its 600 s default or one
 * set on the client. Opt-in: a client states it, nothing checks it, so only
 * a server that knows its clients use such an SDK should trust it.
 */
export const STAINLESS_TIMEOUT_HEADER = 'x-stainless-timeout'

/** Every inbound source `readDeadline` understands, in the order it reads them: the defaults, then the opt-in ones. */
export const KNOWN_DEADLINE_SOURCES = [
  DEADLINE_HEADER,
  GRPC_TIMEOUT_HEADER,
  ENVOY_TIMEOUT_HEADER,
  STAINLESS_TIMEOUT_HEADER,
] as const

export type DeadlineSource = (typeof KNOWN_DEADLINE_SOURCES)[number]

/** Inbound sources trusted by default (every known one but `x-stainless-timeout`). */
export const DEADLINE_SOURCES: readonly DeadlineSource[] = [
  DEADLINE_HEADER,
  GRPC_TIMEOUT_HEADER,
  ENVOY_TIMEOUT_HEADER,
]
