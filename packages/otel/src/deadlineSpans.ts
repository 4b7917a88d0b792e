import { currentDeadline, type Deadline } from '@hourglass/core'
import { type Context, context, type Span, trace } from '@opentelemetry/api'

/**
 * The spans this package makes for work that OpenTelemetry cannot see start:
 * a gRPC call's server span and a job attempt's span. Neither becomes the
 * active span — the handler and the processor run in Hourglass's own
 * AsyncLocalStorage, which only carries the deadline — so they are found
 * through it: by the deadline they were made for, or one of its ancestors
 * (a slice of the call's deadline finds the call's span). Weak: a span lives
 * as long as its deadline does, and work left running after the answer still
 * finds it.
 */
const spans = new WeakMap<Deadline, Span>()

/** Record `span` as the span of the work `deadline` governs. */
export function setDeadlineSpan(deadline: Deadline, span: Span): void {
  spans.set(deadline, span)
}

/** The span recorded for `deadline` or its nearest ancestor, if any. */
export function deadlineSpan(deadline: Deadline | undefined): Span | undefined {
  for (let d = deadline; d; d = d.parent) {
    const span = spans.get(d)
    if (span) return span
  }
  return undefined
}

/**
 * The context a span started for `deadline`'s work should have as parent:
 *
 * 1. the active one when it has a span (an HTTP server span, the caller's
 *    own, instrumentation-grpc's or BullMQ telemetry's): never replaced;
 * 2. else the active one with the span of the gRPC call or job the *current*
 *    deadline belongs to — the handler or processor the work runs in, the
 *    span `DeadlineContextManager` would have made active. It wins over an
 *    explicit deadline's: work given a deadline of its own inside a handler
 *    (`withCallDeadline(Deadline.after(…))`, a fetch's `{ deadline }`, a job
 *    added with its own, as the bullmq README advises for jobs that outlive
 *    their caller) is still that handler's work, and searching the explicit
 *    deadline's ancestors alone put each of them in a trace of its own;
 * 3. else the span of the call or job `deadline` itself (or an ancestor)
 *    belongs to: work handed a call's deadline outside its context.
 *
 * So it is the same parent with or without `DeadlineContextManager`. Cheap
 * when nothing is found: one AsyncLocalStorage read and a WeakMap lookup per
 * ancestor.
 */
export function parentContext(
  deadline?: Deadline | undefined,
  active: Context = context.active(),
): Context {
  if (trace.getSpan(active)) return active
  const current = currentDeadline()
  const span = deadlineSpan(current) ?? (deadline === current ? undefined : deadlineSpan(deadline))
  return span ? trace.setSpan(active, span) : active
}
