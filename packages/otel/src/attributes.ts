/**
 * The Hourglass mini semantic convention for deadlines.
 *
 * OpenTelemetry has no convention for deadlines yet, so every name Hourglass
 * emits lives here, under the `deadline.` namespace, and nowhere else. Where a
 * stable OpenTelemetry attribute already means the same thing
 * (`http.request.resend_count`, `error.type`, `http.response.status_code`) we
 * use it instead of inventing one. All durations are milliseconds, as the
 * names say.
 */

// ── span attributes ─────────────────────────────────────────────────────────

/** The time the request or attempt was given when its deadline started, in ms. */
export const ATTR_DEADLINE_BUDGET_MS = 'deadline.budget_ms'
/** What was left when the deadline started (ingress) or the attempt was sent (egress), in ms. */
export const ATTR_DEADLINE_REMAINING_MS = 'deadline.remaining_ms'
/** Where an inbound budget came from: the header name, or `default`. */
export const ATTR_DEADLINE_SOURCE = 'deadline.source'
/** True when the inbound budget was cut to the server's maximum. */
export const ATTR_DEADLINE_CLAMPED = 'deadline.clamped'
/** `enforce` or `observe` (dark mode: expiry reported, nothing aborted). */
export const ATTR_DEADLINE_MODE = 'deadline.mode'
/** How the request ended: `ok`, `expired` or `client-closed`. */
export const ATTR_DEADLINE_OUTCOME = 'deadline.outcome'
/** Time from the deadline's start to the event, in ms. */
export const ATTR_DEADLINE_ELAPSED_MS = 'deadline.elapsed_ms'
/** Where time ran out: `arrival`, `handler`, `slice`, `upstream` (see `DeadlineStage`). */
export const ATTR_DEADLINE_STAGE = 'deadline.stage'
/** What the server did when time ran out: `504`, `ended` or `observed`. */
export const ATTR_DEADLINE_ACTION = 'deadline.action'
/** The `x-deadline-remaining-ms` value written on an outbound attempt, in ms. */
export const ATTR_DEADLINE_HEADER_MS = 'deadline.header_ms'

/** The slice's name (also on `deadline.exceeded` events, when known). */
export const ATTR_DEADLINE_SLICE = 'deadline.slice'
/** What the slice was allotted when it started, in ms. */
export const ATTR_DEADLINE_SLICE_ALLOTTED_MS = 'deadline.slice.allotted_ms'
/** How long the slice ran, in ms. */
export const ATTR_DEADLINE_SLICE_USED_MS = 'deadline.slice.used_ms'
/** `ok`, `exceeded`, `failed` or `cancelled`. */
export const ATTR_DEADLINE_SLICE_OUTCOME = 'deadline.slice.outcome'

/** Outbound attempt number, 1 for the first (events and the succeeded-calls counter). */
export const ATTR_DEADLINE_ATTEMPT = 'deadline.attempt'
/** The failure code that led to a retry decision (`CONNECT_TIMEOUT`, `rate_limited`, …). */
export const ATTR_DEADLINE_RETRY_REASON = 'deadline.retry.reason'
/** The wait before the next attempt, in ms. */
export const ATTR_DEADLINE_RETRY_DELAY_MS = 'deadline.retry.delay_ms'
/** Why no retry: `no-budget`, `after-first-byte`, `not-idempotent`, `upstream-deadline`, … */
export const ATTR_DEADLINE_RETRY_WHY = 'deadline.retry.why'
/** `retried` or `skipped` (retries counter). */
export const ATTR_DEADLINE_RETRY_OUTCOME = 'deadline.retry.outcome'
/** Which kind of call: `http` (@hourglass/fetch) or `llm` (@hourglass/llm). */
export const ATTR_DEADLINE_CALL_KIND = 'deadline.call.kind'
/** The phase an outbound attempt failed in: `dns`, `connect`, `headers`, `body`. */
export const ATTR_DEADLINE_PHASE = 'deadline.phase'
/** Bytes of response body received by an outbound attempt. */
export const ATTR_DEADLINE_BYTES_RECEIVED = 'deadline.bytes_received'
/** The inbound header that was malformed, and why (on `deadline.invalid_header`). */
export const ATTR_DEADLINE_INVALID_HEADER = 'deadline.invalid_header.name'
export const ATTR_DEADLINE_INVALID_REASON = 'deadline.invalid_header.reason'
/** The response method a handler called after the deadline had answered (`deadline.late_write`). */
export const ATTR_DEADLINE_LATE_METHOD = 'deadline.late_write.method'

// ── stable OpenTelemetry attributes we set ─────────────────────────────────

/** Stable HTTP semconv: how many times this request was re-sent (attempt − 1). */
export const ATTR_HTTP_REQUEST_RESEND_COUNT = 'http.request.resend_count'
/** Stable semconv: a low-cardinality class of error (we use Hourglass error codes). */
export const ATTR_ERROR_TYPE = 'error.type'
export const ATTR_HTTP_REQUEST_METHOD = 'http.request.method'
export const ATTR_HTTP_RESPONSE_STATUS_CODE = 'http.response.status_code'
export const ATTR_URL_FULL = 'url.full'

// ── span names and events ──────────────────────────────────────────────────

/** Child span of one slice: `deadline.slice <name>`. */
export const SPAN_SLICE_PREFIX = 'deadline.slice '
/** Span of one outbound attempt: `deadline.egress <METHOD>`. */
export const SPAN_EGRESS_PREFIX = 'deadline.egress '

export const EVENT_DEADLINE_EXCEEDED = 'deadline.exceeded'
export const EVENT_DEADLINE_CLIENT_CLOSED = 'deadline.client_closed'
export const EVENT_DEADLINE_RETRY = 'deadline.retry'
export const EVENT_DEADLINE_RETRY_SKIPPED = 'deadline.retry_skipped'
export const EVENT_DEADLINE_INVALID_HEADER = 'deadline.invalid_header'
export const EVENT_DEADLINE_LATE_WRITE = 'deadline.late_write'

// ── metrics ────────────────────────────────────────────────────────────────

/** Histogram, ms: what was left when a request's deadline started. */
export const METRIC_INGRESS_REMAINING = 'deadline.ingress.remaining'
/** Histogram, ms: what was left when an outbound attempt was sent (finite deadlines only). */
export const METRIC_EGRESS_REMAINING = 'deadline.egress.remaining'
/** Counter: times a deadline ran out, by `deadline.stage`. */
export const METRIC_EXCEEDED = 'deadline.exceeded'
/** Counter: callers that went away before their response finished. */
export const METRIC_CLIENT_CLOSED = 'deadline.client_closed'
/** Counter: retry decisions, by `deadline.retry.outcome` (and `deadline.retry.why` when skipped). */
export const METRIC_RETRIES = 'deadline.retries'
/** Counter: calls that succeeded, by `deadline.attempt` and `deadline.call.kind`. */
export const METRIC_SUCCEEDED = 'deadline.calls.succeeded'

/**
 * Where a deadline ran out, the value of `deadline.stage`:
 * - `arrival`: the request arrived with no time left;
 * - `handler`: the request's deadline ran out while it was handled;
 * - `slice`: a slice's allotment (or the whole deadline) ran out inside it;
 * - `upstream`: an upstream answered that its deadline ran out (or we gave up on it).
 *
 * One request can count at more than one stage: a slice that runs out is one
 * event, the request's own 504 afterwards is another.
 */
export type DeadlineStage = 'arrival' | 'handler' | 'slice' | 'upstream'
