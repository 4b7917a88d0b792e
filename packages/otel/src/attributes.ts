/**
 * The Hourglass mini semantic convention for deadlines.
 *
 * OpenTelemetry has no convention for deadlines yet, so every name Hourglass
 * invents lives here, under the vendor namespace `hourglass.`, and nowhere
 * else. Where an OpenTelemetry attribute already means the same thing
 * (`http.request.resend_count`, `error.type`, `http.response.status_code`,
 * `rpc.*`, `messaging.*`, `gen_ai.*`) we use it instead of inventing one.
 * Durations on spans and events are milliseconds, as their names say
 * (`_ms`); duration metrics are seconds, as OpenTelemetry's metric
 * conventions ask, with the unit (`s`) in their metadata.
 */

// ── span attributes ─────────────────────────────────────────────────────────

/** The time the request, gRPC call, job or outbound call was given when its deadline started, in ms. */
export const ATTR_DEADLINE_BUDGET_MS = 'hourglass.deadline.budget_ms'
/** What was left when the deadline started (ingress, a gRPC call, a job attempt) or an outbound call was sent (egress), in ms. */
export const ATTR_DEADLINE_REMAINING_MS = 'hourglass.deadline.remaining_ms'
/** Where an inbound budget came from: the header name, or `default`. */
export const ATTR_DEADLINE_SOURCE = 'hourglass.deadline.source'
/** True when the inbound budget was cut to the server's maximum. */
export const ATTR_DEADLINE_CLAMPED = 'hourglass.deadline.clamped'
/** `enforce` or `observe` (dark mode: expiry reported, nothing aborted). */
export const ATTR_DEADLINE_MODE = 'hourglass.deadline.mode'
/**
 * How it ended: a request `ok`, `expired`, `client-closed`; a gRPC server call
 * `ok`, `expired`, `client-cancelled`; a gRPC client call `ok`, `refused`,
 * `expired`, `cancelled`, `error`; a job attempt `completed`, `completed_late`,
 * `retry`, `failed`, `no_time_to_retry`, `deadline_exceeded`, `deferred`, or
 * `expired` (never ran).
 */
export const ATTR_DEADLINE_OUTCOME = 'hourglass.deadline.outcome'
/** Time from the deadline's start to the event, in ms. */
export const ATTR_DEADLINE_ELAPSED_MS = 'hourglass.deadline.elapsed_ms'
/** Where time ran out: `arrival`, `handler`, `queued`, `slice`, `upstream` (see `DeadlineStage`). */
export const ATTR_DEADLINE_STAGE = 'hourglass.deadline.stage'
/**
 * What was done when time ran out: `504` or `ended` (HTTP), `status` (gRPC
 * `DEADLINE_EXCEEDED`), `failed` (a job moved to failed), `completed` (a job
 * that returned anyway, late), `observed` (dark mode: nothing).
 */
export const ATTR_DEADLINE_ACTION = 'hourglass.deadline.action'
/** The `x-deadline-remaining-ms` value written on an outbound attempt, in ms. */
export const ATTR_DEADLINE_HEADER_MS = 'hourglass.deadline.header_ms'

/** The slice's name (also on `hourglass.deadline.exceeded` events, when known). */
export const ATTR_DEADLINE_SLICE = 'hourglass.deadline.slice'
/** What the slice was allotted when it started, in ms. */
export const ATTR_DEADLINE_SLICE_ALLOTTED_MS = 'hourglass.deadline.slice.allotted_ms'
/** How long the slice ran, in ms. */
export const ATTR_DEADLINE_SLICE_USED_MS = 'hourglass.deadline.slice.used_ms'
/** `ok`, `exceeded`, `failed` or `cancelled`. */
export const ATTR_DEADLINE_SLICE_OUTCOME = 'hourglass.deadline.slice.outcome'

/** Outbound attempt number (or a job's attempt), 1 for the first (events and the succeeded-calls counter). */
export const ATTR_DEADLINE_ATTEMPT = 'hourglass.deadline.attempt'
/** The failure code that led to a retry decision (`CONNECT_TIMEOUT`, `rate_limited`, …). */
export const ATTR_DEADLINE_RETRY_REASON = 'hourglass.deadline.retry.reason'
/** The wait before the next attempt, in ms. */
export const ATTR_DEADLINE_RETRY_DELAY_MS = 'hourglass.deadline.retry.delay_ms'
/** Why no retry: `no-budget`, `after-first-byte`, `not-idempotent`, `upstream-deadline`, … */
export const ATTR_DEADLINE_RETRY_WHY = 'hourglass.deadline.retry.why'
/** `retried` or `skipped` (retries counter). */
export const ATTR_DEADLINE_RETRY_OUTCOME = 'hourglass.deadline.retry.outcome'
/** Which kind of call: `http` (@hourglass/fetch) or `llm` (@hourglass/llm). */
export const ATTR_DEADLINE_CALL_KIND = 'hourglass.deadline.call.kind'
/** The phase an outbound attempt failed in: `dns`, `connect`, `headers`, `body`. */
export const ATTR_DEADLINE_PHASE = 'hourglass.deadline.phase'
/** Bytes of response body received by an outbound attempt. */
export const ATTR_DEADLINE_BYTES_RECEIVED = 'hourglass.deadline.bytes_received'
/** The inbound header that was malformed, and why (on `hourglass.deadline.invalid_header`). */
export const ATTR_DEADLINE_INVALID_HEADER = 'hourglass.deadline.invalid_header.name'
export const ATTR_DEADLINE_INVALID_REASON = 'hourglass.deadline.invalid_header.reason'
/** The response method a handler called after the deadline had answered (`hourglass.deadline.late_write`). */
export const ATTR_DEADLINE_LATE_METHOD = 'hourglass.deadline.late_write.method'
/** What was left of a job's deadline when its attempt ended, in ms (never negative). */
export const ATTR_DEADLINE_REMAINING_AT_END_MS = 'hourglass.deadline.remaining_at_end_ms'
/** How long after its deadline a job reached a worker, in ms (on a `queued` `hourglass.deadline.exceeded`). */
export const ATTR_DEADLINE_LATE_MS = 'hourglass.deadline.late_ms'
/** The job came back from a stalled worker (on a `queued` `hourglass.deadline.exceeded`). */
export const ATTR_DEADLINE_STALLED = 'hourglass.deadline.stalled'

// ── stable OpenTelemetry attributes we set ─────────────────────────────────

/** Stable HTTP semconv: how many times this request was re-sent (attempt − 1). */
export const ATTR_HTTP_REQUEST_RESEND_COUNT = 'http.request.resend_count'
/** Stable semconv: a low-cardinality class of error (we use Hourglass error codes). */
export const ATTR_ERROR_TYPE = 'error.type'
export const ATTR_HTTP_REQUEST_METHOD = 'http.request.method'
export const ATTR_HTTP_RESPONSE_STATUS_CODE = 'http.response.status_code'
export const ATTR_URL_FULL = 'url.full'
/** RPC semconv, on the gRPC client and server spans: `grpc`. */
export const ATTR_RPC_SYSTEM = 'rpc.system'
/** The full service name, `package.Service`. */
export const ATTR_RPC_SERVICE = 'rpc.service'
/** The method's name, `Method`. */
export const ATTR_RPC_METHOD = 'rpc.method'
/** The numeric gRPC status code that ended the call. */
export const ATTR_RPC_GRPC_STATUS_CODE = 'rpc.grpc.status_code'
/** Messaging semconv, on a job's span: `bullmq`. */
export const ATTR_MESSAGING_SYSTEM = 'messaging.system'
/** `process`: the job span is the worker processing one job attempt. */
export const ATTR_MESSAGING_OPERATION_TYPE = 'messaging.operation.type'
/** The queue's name. */
export const ATTR_MESSAGING_DESTINATION_NAME = 'messaging.destination.name'
/** The job's id. */
export const ATTR_MESSAGING_MESSAGE_ID = 'messaging.message.id'
/** The job's name, under the attribute BullMQ's own telemetry uses. */
export const ATTR_BULLMQ_JOB_NAME = 'bullmq.job.name'

// ── GenAI semantic conventions, on model attempt spans ─────────────────────
// Names as in @opentelemetry/semantic-conventions 1.45 (incubating, GenAI
// conventions still "Development"): `gen_ai.provider.name` replaced
// `gen_ai.system` in semconv 1.37.

/** The kind of operation: `chat` (@hourglass/llm makes chat completions). */
export const ATTR_GEN_AI_OPERATION_NAME = 'gen_ai.operation.name'
/** The provider: `openai`, `anthropic`, `gcp.gemini`, … (the adapter's name otherwise). */
export const ATTR_GEN_AI_PROVIDER_NAME = 'gen_ai.provider.name'
/** The model asked for. */
export const ATTR_GEN_AI_REQUEST_MODEL = 'gen_ai.request.model'
/** The model that answered (only when the attempt message carries it). */
export const ATTR_GEN_AI_RESPONSE_MODEL = 'gen_ai.response.model'
/** Why the model stopped, one per choice (only when the attempt message carries them). */
export const ATTR_GEN_AI_RESPONSE_FINISH_REASONS = 'gen_ai.response.finish_reasons'
/** Tokens in the prompt. */
export const ATTR_GEN_AI_USAGE_INPUT_TOKENS = 'gen_ai.usage.input_tokens'
/** Tokens in the answer. */
export const ATTR_GEN_AI_USAGE_OUTPUT_TOKENS = 'gen_ai.usage.output_tokens'
/** What @hourglass/llm decided after a model attempt: `success`, `retry`, `fallback`, `fail`. */
export const ATTR_LLM_DECISION = 'hourglass.llm.decision'

// ── span names and events ──────────────────────────────────────────────────

/** Child span of one slice: `deadline.slice <name>`. */
export const SPAN_SLICE_PREFIX = 'deadline.slice '
/** Span of one outbound attempt: `deadline.egress <METHOD>`. */
export const SPAN_EGRESS_PREFIX = 'deadline.egress '
/** Span of one attempt of a job: `process <queue>` (CONSUMER). gRPC spans are named `package.Service/Method`. */
export const SPAN_JOB_PREFIX = 'process '
/** Span of one model attempt, as the GenAI conventions name it: `chat <model>` (CLIENT). */
export const SPAN_LLM_PREFIX = 'chat '

export const EVENT_DEADLINE_EXCEEDED = 'hourglass.deadline.exceeded'
export const EVENT_DEADLINE_CLIENT_CLOSED = 'hourglass.deadline.client_closed'
export const EVENT_DEADLINE_RETRY = 'hourglass.deadline.retry'
export const EVENT_DEADLINE_RETRY_SKIPPED = 'hourglass.deadline.retry_skipped'
export const EVENT_DEADLINE_INVALID_HEADER = 'hourglass.deadline.invalid_header'
export const EVENT_DEADLINE_LATE_WRITE = 'hourglass.deadline.late_write'

// ── metrics ────────────────────────────────────────────────────────────────

/** Histogram, s: what was left when a request's deadline started. */
export const METRIC_INGRESS_REMAINING = 'hourglass.deadline.ingress.remaining'
/** Histogram, s: what was left when an outbound attempt was sent (finite deadlines only). */
export const METRIC_EGRESS_REMAINING = 'hourglass.deadline.egress.remaining'
/** Counter: times a deadline ran out, by `hourglass.deadline.stage`. */
export const METRIC_EXCEEDED = 'hourglass.deadline.exceeded'
/** Counter: callers that went away before their response finished. */
export const METRIC_CLIENT_CLOSED = 'hourglass.deadline.client_closed'
/** Counter: retry decisions, by `hourglass.deadline.retry.outcome` (and `hourglass.deadline.retry.why` when skipped). */
export const METRIC_RETRIES = 'hourglass.deadline.retries'
/** Counter: calls that succeeded, by `hourglass.deadline.attempt` and `hourglass.deadline.call.kind`. */
export const METRIC_SUCCEEDED = 'hourglass.deadline.calls.succeeded'

/**
 * Where a deadline ran out, the value of `hourglass.deadline.stage`:
 * - `arrival`: the request (or gRPC call) arrived with no time left;
 * - `handler`: the request's, call's or job's deadline ran out while it was handled;
 * - `queued`: a job reached a worker after its deadline (it never ran);
 * - `slice`: a slice's allotment (or the whole deadline) ran out inside it;
 * - `upstream`: an upstream answered that its deadline ran out (or we gave up on it).
 *
 * One request can count at more than one stage: a slice that runs out is one
 * event, the request's own 504 afterwards is another.
 */
export type DeadlineStage = 'arrival' | 'handler' | 'queued' | 'slice' | 'upstream'
