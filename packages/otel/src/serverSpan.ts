import { type Context, context, createContextKey, type Span, trace } from '@opentelemetry/api'
import { tracedSpan } from './tracedSpan.js'

/**
 * @opentelemetry/core's RPC metadata key, read without depending on core: the
 * api's `createContextKey` is `Symbol.for(description)`, so this is the very
 * key core's `setRPCMetadata` writes, in any copy of it.
 */
const RPC_METADATA_KEY = createContextKey('OpenTelemetry SDK Context Key RPC_METADATA')

/**
 * The HTTP server span of the request whose middleware runs in `ctx`, while
 * it is open; undefined when this request has none.
 *
 * - instrumentation-http puts its server span in the request's context as RPC
 *   metadata (`getRPCMetadata(ctx).span`, what instrumentation-express names
 *   its route by). That one, not the active span: instrumentation-express
 *   runs every middleware in a span of its own, ended when the middleware
 *   calls `next()`, and a middleware ahead of `deadline()` may call `next()`
 *   inside a span of its own (`startActiveSpan('auth', …)`). Taken for the
 *   request's, such a span got the deadline and the later events were lost
 *   on it (ended), and the server span had none.
 * - A request instrumentation-http chose not to trace (its
 *   `ignoreIncomingRequestHook`) runs with tracing suppressed: it has no
 *   span, and the span active around it is whatever was active where the
 *   server started listening — nobody's request.
 * - Otherwise the active span (no instrumentation-http: one of yours around
 *   the app), if still open. Under instrumentation-express that is its
 *   middleware span (your span is its parent, which @opentelemetry/api does
 *   not reach): a span of yours is found under it only when you set it as
 *   the RPC metadata, as instrumentation-http does (README Limits).
 */
export function serverSpan(ctx: Context = context.active()): Span | undefined {
  const metadata = ctx.getValue(RPC_METADATA_KEY)
  const rpcSpan = isSpan((metadata as { span?: unknown } | undefined)?.span)
    ? (metadata as { span: Span }).span
    : undefined
  return tracedSpan(rpcSpan === undefined ? ctx : trace.setSpan(ctx, rpcSpan))
}

function isSpan(value: unknown): value is Span {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as Span).isRecording === 'function' &&
    typeof (value as Span).setAttributes === 'function'
  )
}
