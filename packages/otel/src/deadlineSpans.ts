import { currentDeadline, type Deadline } from '@hourglass/core'
import { type Context, context, createContextKey, type Span, trace } from '@opentelemetry/api'

/**
 * The spans this package makes for work that OpenTelemetry cannot see start:
 * a gRPC call's server span and a job attempt's span. Neither becomes the
 * active span — the handler and the processor run in Hourglass's own
 * AsyncLocalStorage, which only carries the deadline — so they are found
 * through it: by the deadline they were made for, or one of its ancestors
 * (a slice of the call's deadline finds the call's span). Weak: a span lives
 * as long as its deadline does, and work left running after the answer still
 * finds it. This map holds every instrumentation's (the last one recorded
 * for a deadline), for `DeadlineContextManager`; each instrumentation finds
 * its own through its `DeadlineSpans`.
 */
const anyInstrumentation = new WeakMap<Deadline, Span>()

/**
 * Where `DeadlineContextManager` notes the span it made active (a gRPC
 * call's or a job's, found in `anyInstrumentation`): a deadline's span it
 * lent, not one the app or another instrumentation made active. The api's
 * `createContextKey` is `Symbol.for(description)`, so every copy of this
 * package reads the same key.
 */
const LENT_SPAN = createContextKey('@hourglass/otel DeadlineContextManager lent span')

/**
 * The spans one instrumentation (one set of trace handlers) made for
 * deadlines' work, and the parents its other spans find through them. Its
 * own, not the process's: two instrumentations enabled at once (each on a
 * provider of its own: a test harness's beside the SDK's) each make a span
 * for the same call, and, looked up in one shared map, the slices and
 * attempts of the first were children of the second's span, one its
 * provider never had.
 */
export class DeadlineSpans {
  readonly #spans = new WeakMap<Deadline, Span>()

  /** Record `span` as the span of the work `deadline` governs. */
  set(deadline: Deadline, span: Span): void {
    this.#spans.set(deadline, span)
    anyInstrumentation.set(deadline, span)
  }

  /** The span recorded for `deadline` or its nearest ancestor, if any. */
  find(deadline: Deadline | undefined): Span | undefined {
    return findIn(this.#spans, deadline)
  }

  /** `parentContext` with this instrumentation's spans (see below). */
  readonly parentContext = (
    deadline?: Deadline | undefined,
    active: Context = context.active(),
  ): Context => parentIn(this.#spans, deadline, active)
}

function findIn(spans: WeakMap<Deadline, Span>, deadline: Deadline | undefined): Span | undefined {
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
 *    own, instrumentation-grpc's or BullMQ telemetry's): never replaced —
 *    but for the span `DeadlineContextManager` lent (`LENT_SPAN`) while it
 *    is still the current deadline's, which is looked up again as in 2, in
 *    this instrumentation's own spans;
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
 * ancestor. This one reads the spans of any instrumentation (the last to
 * record one for a deadline): `DeadlineContextManager`'s, which serves them all.
 */
export function parentContext(
  deadline?: Deadline | undefined,
  active: Context = context.active(),
): Context {
  const found = parentIn(anyInstrumentation, deadline, active)
  const lent = trace.getSpan(found)
  return found === active || lent === undefined ? found : found.setValue(LENT_SPAN, lent)
}

function parentIn(
  spans: WeakMap<Deadline, Span>,
  deadline: Deadline | undefined,
  active: Context,
): Context {
  // A span `DeadlineContextManager` lent is the last instrumentation's to
  // record one for this deadline: with two enabled at once (a test
  // harness's beside the SDK's), taken as the app's it made the first's
  // slices, attempts and calls children of a span its provider never had.
  // Each looks up its own instead (rule 2 below). One made active since
  // (`startActiveSpan` inside the handler) is another span: it stays. So
  // does a context the manager lent under another deadline, which the app
  // restored on purpose (`context.with(saved, …)` in another call's
  // handler): its span is no longer the one the manager would lend, and
  // looked up again it was swapped for the current call's.
  const activeSpan = trace.getSpan(active)
  const current = currentDeadline()
  if (
    activeSpan !== undefined &&
    (activeSpan !== active.getValue(LENT_SPAN) ||
      activeSpan !== findIn(anyInstrumentation, current))
  ) {
    return active
  }
  const span =
    findIn(spans, current) ?? (deadline === current ? undefined : findIn(spans, deadline))
  return span ? trace.setSpan(active, span) : active
}
