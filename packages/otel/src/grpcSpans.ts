import { currentDeadline, type Deadline } from '@hourglass/core'
import {
  context,
  diag,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api'
import {
  ATTR_DEADLINE_ACTION,
  ATTR_DEADLINE_BUDGET_MS,
  ATTR_DEADLINE_CLAMPED,
  ATTR_DEADLINE_ELAPSED_MS,
  ATTR_DEADLINE_HEADER_MS,
  ATTR_DEADLINE_INVALID_HEADER,
  ATTR_DEADLINE_INVALID_REASON,
  ATTR_DEADLINE_LATE_METHOD,
  ATTR_DEADLINE_MODE,
  ATTR_DEADLINE_OUTCOME,
  ATTR_DEADLINE_REMAINING_MS,
  ATTR_DEADLINE_SOURCE,
  ATTR_DEADLINE_STAGE,
  ATTR_ERROR_TYPE,
  EVENT_DEADLINE_CLIENT_CLOSED,
  EVENT_DEADLINE_EXCEEDED,
  EVENT_DEADLINE_INVALID_HEADER,
  EVENT_DEADLINE_LATE_WRITE,
} from './attributes.js'
import { metadataGetter, metadataSetter } from './carriers.js'
import type { DeadlineSpans } from './deadlineSpans.js'
import { grpcTargetServer } from './grpcTargetServer.js'
import { defined, type Handlers, ms } from './handlers.js'
import type { OpenWork } from './OpenWork.js'
import {
  fullMethod,
  grpcErrorType,
  rpcAttributes,
  rpcConventions,
  rpcStatusAttributes,
} from './rpcConventions.js'
import { tracedSpan, tracingSuppressed } from './tracedSpan.js'

/**
 * Spans for @hourglass/grpc, as the RPC semantic conventions name them
 * (`package.Service/Method`, `rpc.*`), with the deadline's numbers:
 *
 * - Server: one SERVER span per call, from `server-start` to `server-end`,
 *   child of the `traceparent` in the inbound metadata (read with the global
 *   propagator). The handler does not run inside it (grpc-js gives no hook
 *   for that): this package's own spans made under the call's deadline find
 *   it anyway, and `DeadlineContextManager` makes it the parent of the rest.
 * - Client: one CLIENT span per outbound call, child of the span active where
 *   the call is made; its context is injected into the copy of the metadata
 *   @hourglass/grpc is about to send, so the server's span joins the trace.
 *
 * A call's CLIENT span is work of the request or call it is made for
 * (`openWork`): cut short (the caller left, its deadline ran out), that one's
 * server span ends after it. The cut cancels the outbound call, whose status
 * comes back from grpc-js a tick later: the CLIENT span ended after its
 * parent, an HTTP request's or a gRPC call's server span.
 */
export function grpcTraceHandlers(
  tracer: Tracer,
  deadlineSpans: DeadlineSpans,
  openWork: OpenWork,
): NonNullable<Handlers['grpc']> {
  const { parentContext } = deadlineSpans
  const conventions = rpcConventions()
  const servers = new WeakMap<Deadline, Span>()
  const clients = new WeakMap<object, Span>()
  // Published just before the call's server-start (which has the span), a
  // call `strict` refuses included: its span carries them and ends `refused`.
  let invalid: { method: string; list: Array<{ header: string; reason: string }> } | undefined

  return {
    serverInvalidHeader(m) {
      const pending = { method: m.method, list: m.invalid }
      invalid = pending
      queueMicrotask(() => {
        if (invalid === pending) invalid = undefined
      })
    },
    serverStart(m) {
      // grpc-js reads a call's metadata in the context the server was bound
      // in: bound with tracing suppressed, the server makes no span (nor
      // events of its calls), although the span's parent is the caller's
      // context, read from the metadata. The client's span needs no check:
      // its parent is the active context, and the SDK's tracer heeds it.
      if (tracingSuppressed()) {
        invalid = undefined
        return
      }
      const parent = propagation.extract(ROOT_CONTEXT, m.metadata, metadataGetter)
      const span = tracer.startSpan(
        fullMethod(m.method),
        {
          kind: SpanKind.SERVER,
          attributes: defined({
            ...rpcAttributes(m.method, conventions),
            [ATTR_DEADLINE_BUDGET_MS]: ms(m.budgetMs),
            // A refused call never runs: none of its fallback budget is left to spend.
            [ATTR_DEADLINE_REMAINING_MS]: m.refused ? undefined : ms(m.remainingMs),
            [ATTR_DEADLINE_SOURCE]: m.source,
            [ATTR_DEADLINE_CLAMPED]: m.clamped,
            [ATTR_DEADLINE_MODE]: m.mode,
          }),
        },
        parent,
      )
      if (invalid?.method === m.method) {
        for (const { header, reason } of invalid.list) {
          span.addEvent(EVENT_DEADLINE_INVALID_HEADER, {
            [ATTR_DEADLINE_INVALID_HEADER]: header,
            [ATTR_DEADLINE_INVALID_REASON]: reason,
          })
        }
        invalid = undefined
      }
      servers.set(m.deadline, span)
      deadlineSpans.set(m.deadline, span)
      openWork.own(m.deadline)
    },
    serverExpire(m) {
      const span = servers.get(m.deadline)
      if (!span) return
      span.addEvent(
        EVENT_DEADLINE_EXCEEDED,
        defined({
          [ATTR_DEADLINE_STAGE]: m.stage,
          [ATTR_DEADLINE_BUDGET_MS]: ms(m.budgetMs),
          [ATTR_DEADLINE_ELAPSED_MS]: ms(m.elapsedMs),
          [ATTR_DEADLINE_ACTION]: m.action,
        }),
      )
      if (m.action === 'observed') return
      span.setAttribute(ATTR_ERROR_TYPE, 'DEADLINE_EXCEEDED')
      // A late answer (`late`) keeps the handler's status, OK included, which
      // sets no error at the end: the span must say it failed itself, as an
      // HTTP request's does.
      span.setStatus({ code: SpanStatusCode.ERROR, message: 'DEADLINE_EXCEEDED' })
    },
    serverClientCancelled(m) {
      servers.get(m.deadline)?.addEvent(EVENT_DEADLINE_CLIENT_CLOSED, {
        [ATTR_DEADLINE_ELAPSED_MS]: ms(m.elapsedMs) ?? 0,
      })
    },
    serverLateWrite(m) {
      // The message names no call: found through the current deadline when the
      // late write runs in the handler's context. Usually the call has ended by
      // then (server-end follows the deadline's status at once), and an ended
      // span takes no event: recorded only while the span is open, and
      // never where tracing is suppressed.
      const active = context.active()
      const span = deadlineSpans.find(currentDeadline())
      tracedSpan(span ? trace.setSpan(active, span) : active)?.addEvent(EVENT_DEADLINE_LATE_WRITE, {
        [ATTR_DEADLINE_LATE_METHOD]: m.operation,
      })
    },
    serverEnd(m) {
      const span = servers.get(m.deadline)
      if (!span) return
      servers.delete(m.deadline)
      span.setAttributes(
        defined({
          ...rpcStatusAttributes(m.code, conventions),
          [ATTR_DEADLINE_OUTCOME]: m.outcome,
          [ATTR_DEADLINE_ELAPSED_MS]: ms(m.elapsedMs),
        }),
      )
      const failure = grpcErrorType(m.code, 'server')
      if (failure !== undefined) {
        span.setAttribute(ATTR_ERROR_TYPE, failure)
        span.setStatus({ code: SpanStatusCode.ERROR, message: failure })
      }
      // Cut short (expired, the client left): its work was cancelled and its
      // spans end in a moment. Work left running after an answer is not waited for.
      if (m.outcome === 'expired' || m.outcome === 'client-cancelled') {
        openWork.endAfterWork(m.deadline, () => span.end())
      } else {
        openWork.forget(m.deadline)
        span.end()
      }
    },
    clientStart(m) {
      const parent = parentContext(m.deadline)
      const span = tracer.startSpan(
        fullMethod(m.method),
        {
          kind: SpanKind.CLIENT,
          attributes: defined({
            ...rpcAttributes(m.method, conventions),
            // At creation, as the conventions ask (a sampler may read them).
            ...grpcTargetServer(m.target),
            [ATTR_DEADLINE_BUDGET_MS]: ms(m.budgetMs),
            [ATTR_DEADLINE_REMAINING_MS]: ms(m.remainingMs),
            [ATTR_DEADLINE_HEADER_MS]: m.headerMs,
          }),
        },
        parent,
      )
      // Recorded before anything else can throw: a span started and not
      // recorded is never ended (clientEnd finds nothing), never exported.
      clients.set(m.call, span)
      openWork.track(m.deadline, span, trace.getSpan(parent))
      if (m.metadata) {
        try {
          propagation.inject(trace.setSpan(parent, span), m.metadata, metadataSetter)
        } catch (error) {
          // A propagator of the app's that throws: the call goes out without it.
          diag.warn(
            '@hourglass/otel: the global propagator failed to inject into gRPC metadata',
            error,
          )
        }
      }
    },
    clientEnd(m) {
      const span = clients.get(m.call)
      if (!span) return
      clients.delete(m.call)
      span.setAttributes(
        defined({
          ...rpcStatusAttributes(m.code, conventions),
          [ATTR_DEADLINE_OUTCOME]: m.outcome,
          [ATTR_DEADLINE_ELAPSED_MS]: ms(m.elapsedMs),
        }),
      )
      // RPC semconv: on the client, every status but OK is an error.
      const failure = grpcErrorType(m.code, 'client')
      if (failure !== undefined) {
        span.setAttribute(ATTR_ERROR_TYPE, failure)
        span.setStatus({ code: SpanStatusCode.ERROR, message: failure })
      }
      span.end()
      openWork.untrack(span)
    },
  }
}
