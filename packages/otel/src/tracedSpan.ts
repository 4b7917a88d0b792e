import { type Context, context, createContextKey, type Span, trace } from '@opentelemetry/api'

/**
 * @opentelemetry/core's suppress-tracing key, read without depending on core:
 * the api's `createContextKey` is `Symbol.for(description)`, so this is the
 * very key core's `suppressTracing` writes, in any copy of it.
 */
const SUPPRESS_TRACING_KEY = createContextKey('OpenTelemetry SDK Context Key SUPPRESS_TRACING')

/**
 * The span of `ctx` (its active span by default), while it can still take
 * events; undefined where tracing is suppressed.
 *
 * instrumentation-http runs a request it chose not to trace (its
 * `ignoreIncomingRequestHook`) with tracing suppressed, in the context the
 * server started listening in: the span there is nobody's request — a `boot`
 * span around `listen()` —, and the SDK would start no span of ours in that
 * context either. Every event written to "the span active then" (a retry, a
 * skipped one, an admission decision, a cooldown, a late write) goes through
 * this, so such a request writes nothing to any span.
 */
export function tracedSpan(ctx: Context = context.active()): Span | undefined {
  if (tracingSuppressed(ctx)) return undefined
  return open(trace.getSpan(ctx))
}

/**
 * Whether `ctx` (the active context by default) has tracing suppressed, as
 * @opentelemetry/core's `isTracingSuppressed` says: an exporter's own calls,
 * a request or server its owner chose not to trace. No span of ours is
 * started there. The SDK's tracer already returns a non-recording span for a
 * parent context so marked; this is for the spans whose parent is not the
 * active context — a gRPC call's and a job's, children of the trace context
 * they carried in, read from a fresh context.
 */
export function tracingSuppressed(ctx: Context = context.active()): boolean {
  return ctx.getValue(SUPPRESS_TRACING_KEY) === true
}

/**
 * `span` while it can still take events and attributes. instrumentation-http
 * ends the server span on the response's 'close', which comes before
 * @hourglass/express hears that the caller left (and before any late write):
 * writing to it then is lost anyway, and the SDK logs "Cannot execute the
 * operation on ended Span" through diag for every such request.
 */
export function open(span: Span | undefined): Span | undefined {
  return span?.isRecording() ? span : undefined
}
