import { currentDeadline, currentRequestId, type Deadline } from '@hourglass/core'
import type { LlmAttemptMessage } from '@hourglass/llm'
import {
  type Context,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api'
import { AttemptSpans } from './AttemptSpans.js'
import {
  ATTR_DEADLINE_ACTION,
  ATTR_DEADLINE_ATTEMPT,
  ATTR_DEADLINE_BUDGET_MS,
  ATTR_DEADLINE_BYTES_RECEIVED,
  ATTR_DEADLINE_CLAMPED,
  ATTR_DEADLINE_ELAPSED_MS,
  ATTR_DEADLINE_HEADER_MS,
  ATTR_DEADLINE_INVALID_HEADER,
  ATTR_DEADLINE_INVALID_REASON,
  ATTR_DEADLINE_LATE_METHOD,
  ATTR_DEADLINE_MODE,
  ATTR_DEADLINE_OUTCOME,
  ATTR_DEADLINE_PHASE,
  ATTR_DEADLINE_REDIRECT,
  ATTR_DEADLINE_REMAINING_MS,
  ATTR_DEADLINE_RETRY_DELAY_MS,
  ATTR_DEADLINE_RETRY_REASON,
  ATTR_DEADLINE_RETRY_WHY,
  ATTR_DEADLINE_SLICE,
  ATTR_DEADLINE_SLICE_ALLOTTED_MS,
  ATTR_DEADLINE_SLICE_OUTCOME,
  ATTR_DEADLINE_SLICE_USED_MS,
  ATTR_DEADLINE_SOURCE,
  ATTR_DEADLINE_STAGE,
  ATTR_ERROR_TYPE,
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_OUTPUT_TYPE,
  ATTR_GEN_AI_PROVIDER_NAME,
  ATTR_GEN_AI_REQUEST_FREQUENCY_PENALTY,
  ATTR_GEN_AI_REQUEST_MAX_TOKENS,
  ATTR_GEN_AI_REQUEST_MODEL,
  ATTR_GEN_AI_REQUEST_PRESENCE_PENALTY,
  ATTR_GEN_AI_REQUEST_SEED,
  ATTR_GEN_AI_REQUEST_STOP_SEQUENCES,
  ATTR_GEN_AI_REQUEST_STREAM,
  ATTR_GEN_AI_REQUEST_TEMPERATURE,
  ATTR_GEN_AI_REQUEST_TOP_K,
  ATTR_GEN_AI_REQUEST_TOP_P,
  ATTR_GEN_AI_RESPONSE_FINISH_REASONS,
  ATTR_GEN_AI_RESPONSE_ID,
  ATTR_GEN_AI_RESPONSE_MODEL,
  ATTR_GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK,
  ATTR_GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS,
  ATTR_GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
  ATTR_GEN_AI_USAGE_INPUT_TOKENS,
  ATTR_GEN_AI_USAGE_OUTPUT_TOKENS,
  ATTR_GEN_AI_USAGE_REASONING_OUTPUT_TOKENS,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_REQUEST_METHOD_ORIGINAL,
  ATTR_HTTP_REQUEST_RESEND_COUNT,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_LLM_ADMISSION_ACTION,
  ATTR_LLM_ADMISSION_CAUSE,
  ATTR_LLM_ADMISSION_WAIT_MS,
  ATTR_LLM_COOLDOWN_DURATION_MS,
  ATTR_LLM_COOLDOWN_REASON,
  ATTR_LLM_COOLDOWN_SCOPE,
  ATTR_LLM_COOLDOWN_STATE,
  ATTR_LLM_DECISION,
  ATTR_LLM_KEY_ID,
  ATTR_LLM_PROVIDER,
  ATTR_LLM_PROVIDER_REQUEST_ID,
  ATTR_OPENAI_RESPONSE_SERVICE_TIER,
  ATTR_OPENAI_RESPONSE_SYSTEM_FINGERPRINT,
  ATTR_REQUEST_ID,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  ATTR_URL_FULL,
  EVENT_DEADLINE_CLIENT_CLOSED,
  EVENT_DEADLINE_EXCEEDED,
  EVENT_DEADLINE_INVALID_HEADER,
  EVENT_DEADLINE_LATE_WRITE,
  EVENT_DEADLINE_RETRY,
  EVENT_DEADLINE_RETRY_SKIPPED,
  EVENT_LLM_ADMISSION,
  EVENT_LLM_COOLDOWN,
  SPAN_EGRESS_PREFIX,
  SPAN_SLICE_PREFIX,
} from './attributes.js'
import { DeadlineSpans } from './deadlineSpans.js'
import { grpcTraceHandlers } from './grpcSpans.js'
import {
  defined,
  ENDED_IN_ERROR_TYPE,
  ENDED_IN_ERROR_WHY,
  endedInError,
  errorType,
  firstChunkSeconds,
  genAiOperation,
  genAiProvider,
  type Handlers,
  httpMethod,
  knownGenAiProvider,
  modelAttemptErrorType,
  modelHttpStatus,
  modelRetryReason,
  modelSkippedReason,
  modelStoppedByCaller,
  ms,
  retryNeverSent,
  spokeOpenAI,
  stoppedByCaller,
} from './handlers.js'
import { bullmqTraceHandlers } from './jobSpans.js'
import { OpenWork } from './OpenWork.js'
import { providerText } from './providerText.js'
import { ranOutAt } from './ranOutAt.js'
import { serverSpan } from './serverSpan.js'
import { open, tracedSpan } from './tracedSpan.js'
import { withRequestIds } from './withRequestIds.js'

/**
 * Spans and span events for the Hourglass channels.
 *
 * - Ingress: the request's deadline is described on its HTTP server span —
 *   @opentelemetry/instrumentation-http's, found through its RPC metadata,
 *   not as the active span, which instrumentation-express (or a middleware
 *   ahead) makes one of its own, ended at `next()` (see `serverSpan`).
 *   Later events of the same request (expire, client closed, end) go to that
 *   same span, found by the request's `Deadline`, because they fire from
 *   timers and socket callbacks whose active context is not guaranteed.
 * - Slices: a child span `deadline.slice <name>` of the span active when the
 *   slice starts (of the enclosing slice's for a plan made inside a slice:
 *   `sliceParent`), ended when the slice ends.
 * - Egress: one span `deadline.egress <METHOD>` per attempt, child of the span
 *   active when @hourglass/fetch starts the attempt. Why not the undici client
 *   span: instrumentation-undici creates it later, on undici's own
 *   `undici:request:create` channel, and keeps it private; reaching it would
 *   mean guessing which request is ours. The attempt span is exact, exists
 *   with or without instrumentation-undici, and shows retries as siblings.
 *   It is INTERNAL, not CLIENT, so HTTP client span counts stay right.
 * - gRPC calls and jobs: their own spans (grpcSpans.ts, jobSpans.ts). Work
 *   inside them runs outside any OpenTelemetry context, so slices, attempts
 *   and retries there fall back to the span of the deadline's call or job
 *   (`parentContext`) when no span is active.
 * - Model attempts: one CLIENT span `chat <model>` per attempt of
 *   @hourglass/llm, with the GenAI semantic-convention attributes. llm
 *   announces an attempt only when it has ended, so the span is made then,
 *   its start set back by the attempt's latency: the attempt's egress spans
 *   are its siblings, not its children.
 */
export function traceHandlers(sdkTracer: Tracer): Handlers {
  // A request's server span, found at its start; null for a request that has
  // none (not traced by instrumentation-http), so its later events do not
  // look for one in whatever context their timer or socket callback runs in.
  const requestSpans = new WeakMap<Deadline, Span | null>()
  // Server spans that found no request id at `express.start`: the app's
  // deadline() runs ahead of the middleware that sets it (the gateway's
  // router mounted behind one: its `runWithRequestId` comes later). The
  // first span started inside the request with an id names it, or else the
  // request's end if it comes in that context. Found by the handler's
  // current deadline — the request's, or one under it — never by the active
  // span, which may be anybody's. `unnamedCount` keeps the common case (every
  // server span named at its start) to one comparison per span started.
  const unnamed = new WeakMap<Deadline, Span>()
  let unnamedCount = 0
  const takeUnnamed = (deadline: Deadline): Span | undefined => {
    const span = unnamed.get(deadline)
    if (span !== undefined && unnamed.delete(deadline)) unnamedCount--
    return span
  }
  const nameRequestSpan = (id: string): void => {
    if (unnamedCount === 0) return
    for (let d = currentDeadline(); d !== undefined; d = d.parent) {
      const span = takeUnnamed(d)
      if (span === undefined) continue
      open(span)?.setAttribute(ATTR_REQUEST_ID, id)
      return
    }
  }
  // Every span started here carries the request id of the work it was started in.
  const tracer = withRequestIds(sdkTracer, nameRequestSpan)
  // The request's server span while open; for a request whose start was not
  // heard (the instrumentation enabled since), the one its context names.
  const requestSpan = (deadline: Deadline): Span | undefined => {
    const span = requestSpans.get(deadline)
    return span === undefined ? serverSpan() : open(span ?? undefined)
  }
  // The spans of gRPC calls and jobs this set made, found through their
  // deadlines: the parents of work run in their handlers (see DeadlineSpans).
  const deadlineSpans = new DeadlineSpans()
  const { parentContext } = deadlineSpans
  const sliceSpans = new WeakMap<Deadline, Span>()
  // The span each slice span would have had as parent were it not nested:
  // the active one (or the gRPC call's or job's) when it started. A slice of
  // a plan made inside that slice nests under it only while this is still
  // the span the new slice would get (see `sliceParent`).
  const sliceAnchors = new WeakMap<Span, Span | undefined>()
  // When each slice span started, as `performance.now()`: its exceeded event
  // is stamped when its time ran out, counted from here. The SDK reads such
  // a time against the span's own start (epoch ms would be read against
  // `Date.now()`, which drifts from it: the event landed a ms off, or more).
  const sliceStarts = new WeakMap<Span, number>()
  /**
   * The context a slice starts in, and the span it would get without
   * nesting. A slice of a plan made inside another slice (`slice.plan(…)`,
   * at any depth, `child()`s between) is part of that slice, as its deadline
   * is: its span is a child of the enclosing slice's span, while open, when
   * the span it would otherwise get is the one the enclosing slice had then.
   * The slice is never the active span (Hourglass keeps its own context):
   * parented by the active span alone, a nested slice was drawn beside the
   * slice it ran in. A span of yours made active inside the enclosing slice
   * stays the parent.
   */
  const sliceParent = (deadline: Deadline): { ctx: Context; anchor: Span | undefined } => {
    const ctx = parentContext(deadline)
    const anchor = trace.getSpan(ctx)
    for (let d = deadline.parent; d !== undefined; d = d.parent) {
      const enclosing = open(sliceSpans.get(d))
      if (enclosing === undefined) continue
      if (sliceAnchors.get(enclosing) !== anchor) break
      return { ctx: trace.setSpan(ctx, enclosing), anchor }
    }
    return { ctx, anchor }
  }
  const attempts = new AttemptSpans()
  // Our slice, egress and gRPC client spans still open under each traced
  // request or gRPC call: its server span ends after them when it is cut
  // short (see OpenWork).
  const openWork = new OpenWork()
  const track = (deadline: Deadline | undefined, span: Span, parent: Context): void =>
    openWork.track(deadline, span, trace.getSpan(parent))
  const untrack = (span: Span): void => openWork.untrack(span)

  return {
    express: {
      start(m) {
        const span = serverSpan()
        requestSpans.set(m.deadline, span ?? null)
        if (!span) return
        openWork.own(m.deadline)
        const requestId = currentRequestId()
        if (requestId === undefined && !unnamed.has(m.deadline)) {
          unnamed.set(m.deadline, span)
          unnamedCount++
        }
        // A refused request (`strict`, a malformed header) never runs: its
        // budget is the fallback (source `default`) and nothing of it is
        // left to spend, so no remaining time is recorded for it.
        span.setAttributes(
          defined({
            [ATTR_DEADLINE_BUDGET_MS]: ms(m.budgetMs),
            [ATTR_DEADLINE_REMAINING_MS]: m.refused ? undefined : ms(m.deadline.remaining()),
            [ATTR_DEADLINE_SOURCE]: m.source,
            [ATTR_DEADLINE_CLAMPED]: m.clamped,
            [ATTR_DEADLINE_MODE]: m.mode,
            [ATTR_REQUEST_ID]: requestId,
          }),
        )
      },
      invalidHeader(m) {
        const span = serverSpan()
        for (const invalid of m.invalid) {
          span?.addEvent(EVENT_DEADLINE_INVALID_HEADER, {
            [ATTR_DEADLINE_INVALID_HEADER]: invalid.header,
            [ATTR_DEADLINE_INVALID_REASON]: invalid.reason,
          })
        }
      },
      expire(m) {
        const span = requestSpan(m.deadline)
        if (!span) return
        span.addEvent(
          EVENT_DEADLINE_EXCEEDED,
          defined({
            [ATTR_DEADLINE_STAGE]: m.stage,
            [ATTR_DEADLINE_SLICE]: m.slice,
            [ATTR_DEADLINE_BUDGET_MS]: ms(m.budgetMs),
            [ATTR_DEADLINE_ELAPSED_MS]: ms(m.elapsedMs),
            [ATTR_DEADLINE_ACTION]: m.action,
          }),
        )
        // Dark mode changed nothing for the caller: not an error of this request.
        if (m.action === 'observed') return
        span.setAttribute(ATTR_ERROR_TYPE, 'DEADLINE_EXCEEDED')
        // A streamed response cut short (`ended`) keeps its 2xx status, which
        // instrumentation-http leaves UNSET: the span must say it failed itself.
        span.setStatus({ code: SpanStatusCode.ERROR, message: 'deadline exceeded' })
      },
      clientClosed(m) {
        requestSpan(m.deadline)?.addEvent(EVENT_DEADLINE_CLIENT_CLOSED, {
          [ATTR_DEADLINE_ELAPSED_MS]: ms(m.elapsedMs) ?? 0,
        })
      },
      lateWrite(m) {
        // After the answer by definition: the server span has ended, unless
        // the handler has an open span of its own active.
        tracedSpan()?.addEvent(EVENT_DEADLINE_LATE_WRITE, {
          [ATTR_DEADLINE_LATE_METHOD]: m.method,
        })
      },
      end(m) {
        const span = open(requestSpans.get(m.deadline) ?? undefined)
        requestSpans.delete(m.deadline)
        const unnamedSpan = takeUnnamed(m.deadline)
        if (!span) {
          openWork.forget(m.deadline)
          return
        }
        span.setAttributes(
          defined({
            [ATTR_DEADLINE_OUTCOME]: m.outcome,
            [ATTR_DEADLINE_ELAPSED_MS]: ms(m.elapsedMs),
            // Still unnamed: the end comes in the context that ended the
            // response, the handler's when it answered (not our 504's timer).
            [ATTR_REQUEST_ID]: unnamedSpan === undefined ? undefined : currentRequestId(),
          }),
        )
        // The server's own code destroyed the response with an error before it
        // ended (a pipeline whose source failed mid-body): its status code is
        // the 2xx already sent, which instrumentation-http leaves UNSET.
        if (m.outcome === 'error') {
          span.setAttribute(ATTR_ERROR_TYPE, errorType(m.error))
          span.setStatus({ code: SpanStatusCode.ERROR, message: 'response failed' })
        }
        // Cut short (the caller left, the server's own error, the deadline):
        // the request's work was cancelled and its spans end in a moment.
        // Work left running after an answer (`ok`) is not waited for.
        if (m.outcome === 'ok') openWork.forget(m.deadline)
        else openWork.holdEnd(m.deadline, span)
      },
    },
    core: {
      sliceStart(m) {
        const { ctx, anchor } = sliceParent(m.deadline)
        const span = tracer.startSpan(
          SPAN_SLICE_PREFIX + m.slice,
          {
            attributes: defined({
              [ATTR_DEADLINE_SLICE]: m.slice,
              [ATTR_DEADLINE_SLICE_ALLOTTED_MS]: ms(m.allottedMs),
            }),
          },
          ctx,
        )
        sliceSpans.set(m.deadline, span)
        sliceAnchors.set(span, anchor)
        sliceStarts.set(span, performance.now())
        track(m.deadline, span, ctx)
      },
      sliceEnd(m) {
        const span = sliceSpans.get(m.deadline)
        if (!span) return
        sliceSpans.delete(m.deadline)
        span.setAttributes(
          defined({
            [ATTR_DEADLINE_SLICE_USED_MS]: ms(m.usedMs),
            [ATTR_DEADLINE_SLICE_OUTCOME]: m.outcome,
          }),
        )
        if (m.outcome === 'exceeded' || m.outcome === 'observed') {
          // Ran over. In dark mode (`observed`) nothing was done: the event
          // says so, as a request's observed expiry does, and the status stays unset.
          const observed = m.outcome === 'observed'
          // When its time ran out, not now: a dark-mode slice ends whenever
          // its step finished (see `ranOutAt`).
          const now = performance.now()
          const started = sliceStarts.get(span)
          span.addEvent(
            EVENT_DEADLINE_EXCEEDED,
            defined({
              [ATTR_DEADLINE_STAGE]: 'slice',
              [ATTR_DEADLINE_SLICE]: m.slice,
              [ATTR_DEADLINE_SLICE_ALLOTTED_MS]: ms(m.allottedMs),
              [ATTR_DEADLINE_SLICE_USED_MS]: ms(m.usedMs),
              [ATTR_DEADLINE_ACTION]: observed ? 'observed' : undefined,
            }),
            started === undefined ? now : ranOutAt(m.deadline, m.allottedMs, started, now),
          )
          if (!observed) {
            span.setAttribute(ATTR_ERROR_TYPE, 'DEADLINE_EXCEEDED')
            span.setStatus({ code: SpanStatusCode.ERROR, message: `slice "${m.slice}" ran out` })
          }
        } else if (m.outcome === 'failed') {
          span.setAttribute(ATTR_ERROR_TYPE, errorType(m.error))
          span.setStatus({ code: SpanStatusCode.ERROR, message: `slice "${m.slice}" failed` })
        }
        span.end()
        untrack(span)
      },
    },
    fetch: {
      attempt(m) {
        // Sends before this one, for any reason (the semconv counts
        // redirects): the attempt's retries, then its redirect hops.
        const resends = m.attempt - 1 + (m.redirect ?? 0)
        // A method the conventions do not know is `_OTHER` in the name and
        // the attribute (span names must stay few), the original beside it.
        const method = httpMethod(m.method)
        const parent = parentContext(m.deadline)
        const span = tracer.startSpan(
          SPAN_EGRESS_PREFIX + method,
          {
            kind: SpanKind.INTERNAL,
            attributes: defined({
              [ATTR_HTTP_REQUEST_METHOD]: method,
              [ATTR_HTTP_REQUEST_METHOD_ORIGINAL]: method === m.method ? undefined : m.method,
              [ATTR_URL_FULL]: m.url,
              [ATTR_DEADLINE_ATTEMPT]: m.attempt,
              [ATTR_DEADLINE_REDIRECT]: m.redirect,
              [ATTR_HTTP_REQUEST_RESEND_COUNT]: resends > 0 ? resends : undefined,
              [ATTR_DEADLINE_BUDGET_MS]: ms(m.deadline?.budgetMs),
              [ATTR_DEADLINE_REMAINING_MS]: ms(m.remainingMs),
              [ATTR_DEADLINE_HEADER_MS]: m.headerMs,
            }),
          },
          parent,
        )
        attempts.add(m, span)
        track(m.deadline ?? currentDeadline(), span, parent)
      },
      attemptEnd(m) {
        const span = attempts.take(m)
        if (!span) return
        span.setAttributes(
          defined({
            [ATTR_HTTP_RESPONSE_STATUS_CODE]: m.statusCode,
            [ATTR_DEADLINE_ELAPSED_MS]: ms(m.elapsedMs),
            [ATTR_DEADLINE_PHASE]: m.phase,
            [ATTR_DEADLINE_BYTES_RECEIVED]: m.bytesReceived,
          }),
        )
        // As the HTTP conventions ask of a client's send: a failure code, else
        // a 4xx or 5xx status, is the error.type (5xx alone is the server
        // side's rule: a 429 or 404 attempt read UNSET here while the undici
        // CLIENT span beside it, and the model attempt's chat span, said
        // ERROR). Not the caller's own stop of an answer it had (see
        // `stoppedByCaller`): its phase and bytes say where it stopped.
        const failure =
          (stoppedByCaller(m) ? undefined : m.errorCode) ??
          (m.statusCode !== undefined && m.statusCode >= 400 ? String(m.statusCode) : undefined)
        if (failure !== undefined) {
          span.setAttribute(ATTR_ERROR_TYPE, failure)
          span.setStatus({ code: SpanStatusCode.ERROR, message: failure })
        }
        span.end()
        untrack(span)
      },
      // Retry decisions can come after the span active then has ended (work
      // left running after the answer): only an open span takes the event,
      // and none of a request instrumentation-http does not trace (tracedSpan).
      retry(m) {
        tracedSpan(parentContext(m.deadline))?.addEvent(EVENT_DEADLINE_RETRY, {
          [ATTR_DEADLINE_ATTEMPT]: m.attempt,
          [ATTR_DEADLINE_RETRY_REASON]: m.reason,
          [ATTR_DEADLINE_RETRY_DELAY_MS]: ms(m.delayMs) ?? 0,
        })
      },
      retrySkipped(m) {
        tracedSpan(parentContext(m.deadline))?.addEvent(EVENT_DEADLINE_RETRY_SKIPPED, {
          [ATTR_DEADLINE_ATTEMPT]: m.attempt,
          [ATTR_DEADLINE_RETRY_REASON]: m.reason,
          [ATTR_DEADLINE_RETRY_WHY]: m.why,
        })
      },
    },
    llm: {
      attempt(m) {
        // A GenAI inference span is a request to the model: an attempt never
        // sent (llm could not build the request) made none, and a 0 ms CLIENT
        // span would stand for a call that did not happen. Its failure is on
        // the caller's span, as the retry_skipped event below.
        if (m.sent !== false) modelAttemptSpan(tracer, m, parentContext(m.deadline))
        // An answer that ended in an error after its first token: not retried,
        // as the same stream broken by an error frame (see `endedInError`).
        if (endedInError(m)) {
          tracedSpan(parentContext(m.deadline))?.addEvent(EVENT_DEADLINE_RETRY_SKIPPED, {
            [ATTR_DEADLINE_ATTEMPT]: m.attempt,
            [ATTR_DEADLINE_RETRY_REASON]: ENDED_IN_ERROR_TYPE,
            [ATTR_DEADLINE_RETRY_WHY]: ENDED_IN_ERROR_WHY,
          })
          return
        }
        // A failed attempt this model was not tried again after: as fetch's
        // retry_skipped, which names the attempt that failed — for a retry
        // never sent (`sent: false`, its `retryReason` the failure before),
        // the attempt before it, whose retry it was.
        // Not an answer its caller stopped (`modelStoppedByCaller`): nothing failed.
        if (
          m.why !== undefined &&
          m.decision !== 'retry' &&
          m.decision !== 'success' &&
          !modelStoppedByCaller(m)
        ) {
          tracedSpan(parentContext(m.deadline))?.addEvent(
            EVENT_DEADLINE_RETRY_SKIPPED,
            defined({
              [ATTR_DEADLINE_ATTEMPT]: retryNeverSent(m) ? m.attempt - 1 : m.attempt,
              [ATTR_DEADLINE_RETRY_REASON]: modelSkippedReason(m),
              [ATTR_DEADLINE_RETRY_WHY]: m.why,
            }),
          )
          return
        }
        if (m.decision !== 'retry') return
        tracedSpan(parentContext(m.deadline))?.addEvent(
          EVENT_DEADLINE_RETRY,
          defined({
            [ATTR_DEADLINE_ATTEMPT]: m.attempt + 1,
            [ATTR_DEADLINE_RETRY_REASON]: modelRetryReason(m),
            [ATTR_DEADLINE_RETRY_DELAY_MS]: ms(m.delayMs),
          }),
        )
      },
      // A retry decided (its `retry` event above) and given up before its
      // attempt: the caller left or the deadline ended during its wait, the
      // cost budget or admission refused it. As fetch's retry_skipped.
      // llm's message names the attempt not made; every other retry_skipped
      // (fetch's, a model attempt not retried) names the attempt that failed,
      // one less: so does this one, or one event meant two things by package.
      retrySkipped(m) {
        tracedSpan(parentContext(m.deadline))?.addEvent(EVENT_DEADLINE_RETRY_SKIPPED, {
          [ATTR_DEADLINE_ATTEMPT]: m.attempt - 1,
          [ATTR_DEADLINE_RETRY_REASON]: m.reason,
          [ATTR_DEADLINE_RETRY_WHY]: m.why,
        })
      },
      // Admission decides inside the call, so the span active then is the
      // call's (the request's, or one of yours around the call). Its messages
      // carry no deadline to find that span by otherwise: without an open
      // active span (or in a request instrumentation-http does not trace)
      // the decision is not recorded.
      admission(m) {
        tracedSpan()?.addEvent(
          EVENT_LLM_ADMISSION,
          defined({
            // No dialect on admission's message: left out unless the name alone tells (knownGenAiProvider).
            [ATTR_GEN_AI_PROVIDER_NAME]: knownGenAiProvider(m),
            [ATTR_LLM_PROVIDER]: m.provider,
            [ATTR_LLM_KEY_ID]: m.keyId,
            [ATTR_LLM_ADMISSION_ACTION]: m.action,
            [ATTR_LLM_ADMISSION_CAUSE]: m.cause,
            [ATTR_LLM_ADMISSION_WAIT_MS]: ms(m.waitMs),
          }),
        )
      },
      // A cooldown starts or grows from a call's failed attempt (its span is
      // active then); one that ends on its own, outside any call, is on no span.
      cooldown(m) {
        // llm's own measure, on the admission's clocks; an older llm sent
        // only `untilMs`, on its wall clock, which may not be this host's.
        const untilMs = m.state === 'end' ? undefined : (m.durationMs ?? m.untilMs - Date.now())
        tracedSpan()?.addEvent(
          EVENT_LLM_COOLDOWN,
          defined({
            [ATTR_GEN_AI_PROVIDER_NAME]: knownGenAiProvider(m),
            [ATTR_LLM_PROVIDER]: m.provider,
            [ATTR_GEN_AI_REQUEST_MODEL]: m.model || undefined,
            [ATTR_LLM_KEY_ID]: m.keyId,
            [ATTR_LLM_COOLDOWN_SCOPE]: m.scope,
            [ATTR_LLM_COOLDOWN_STATE]: m.state,
            [ATTR_LLM_COOLDOWN_DURATION_MS]:
              untilMs === undefined ? undefined : ms(Math.max(0, untilMs)),
            [ATTR_LLM_COOLDOWN_REASON]: m.reason,
          }),
        )
      },
    },
    grpc: grpcTraceHandlers(tracer, deadlineSpans, openWork),
    bullmq: bullmqTraceHandlers(tracer, deadlineSpans),
  }
}

/** One model attempt as a GenAI inference span, ended as it is made (see above). */
function modelAttemptSpan(tracer: Tracer, m: LlmAttemptMessage, parent: Context): void {
  const failure = modelAttemptErrorType(m)
  // On the performance clock, which the SDK reads (a number no later than
  // `performance.now()`) against its own `Date.now()` at the span's start,
  // as it times every other span. As epoch ms made of `timeOrigin +
  // performance.now()`, the monotonic clock's, it was off by the drift
  // between the two clocks (NTP corrections, time stepped, a suspend):
  // the chat span stood that far from its parent and the attempt's egress
  // span, seconds in a process up for weeks.
  const end = performance.now()
  const operation = genAiOperation(m)
  const openai = spokeOpenAI(m)
  const span = tracer.startSpan(
    // `chat <model>`, as SPAN_LLM_PREFIX says; Gemini's `generate_content
    // <model>`; the operation alone when no model is named (the conventions).
    m.model === '' ? operation : `${operation} ${m.model}`,
    {
      kind: SpanKind.CLIENT,
      // When llm says (the real clock), as it began: `end − latencyMs` is as
      // late as this message came, after a GC pause or a busy subscriber
      // ahead of us, and such a span began after the egress span it covers.
      startTime:
        typeof m.startedAt === 'number' && m.startedAt <= end
          ? m.startedAt
          : Number.isFinite(m.latencyMs)
            ? end - Math.max(0, m.latencyMs)
            : end,
      attributes: defined({
        [ATTR_GEN_AI_OPERATION_NAME]: operation,
        // The provider, not the adapter's name (the caller's: the gateway's config key).
        [ATTR_GEN_AI_PROVIDER_NAME]: genAiProvider(m),
        [ATTR_LLM_PROVIDER]: m.provider,
        // "Conditionally required: if available": an adapter of the user's
        // whose model is "" names none, as its span name says.
        [ATTR_GEN_AI_REQUEST_MODEL]: m.model || undefined,
        [ATTR_SERVER_ADDRESS]: m.serverAddress,
        [ATTR_SERVER_PORT]: m.serverAddress === undefined ? undefined : m.serverPort,
        [ATTR_GEN_AI_USAGE_INPUT_TOKENS]: m.inputTokens,
        [ATTR_GEN_AI_USAGE_OUTPUT_TOKENS]: m.outputTokens,
        [ATTR_GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS]: m.cachedInputTokens,
        [ATTR_GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS]: m.cacheCreationInputTokens,
        [ATTR_GEN_AI_USAGE_REASONING_OUTPUT_TOKENS]: m.reasoningTokens,
        // Left out, as on the metrics, when the answer named none (an adapter
        // of the user's): a blank model is no model.
        // The provider's strings, bounded (see providerText).
        [ATTR_GEN_AI_RESPONSE_MODEL]: providerText(m.responseModel) || undefined,
        [ATTR_GEN_AI_RESPONSE_ID]: providerText(m.responseId),
        // What the provider's support asks for, on the failure an operator
        // finds in the trace: bounded as its other strings are.
        [ATTR_LLM_PROVIDER_REQUEST_ID]: providerText(m.providerRequestId),
        // "If and only if the request is streaming" (the conventions).
        [ATTR_GEN_AI_REQUEST_STREAM]: m.stream === true ? true : undefined,
        [ATTR_GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK]: firstChunkSeconds(m),
        // OpenAI's fields, under its names: only from an OpenAI-compatible answer.
        [ATTR_OPENAI_RESPONSE_SYSTEM_FINGERPRINT]: openai
          ? providerText(m.systemFingerprint)
          : undefined,
        [ATTR_OPENAI_RESPONSE_SERVICE_TIER]: openai ? providerText(m.serviceTier) : undefined,
        [ATTR_HTTP_RESPONSE_STATUS_CODE]: modelHttpStatus(m.status),
        [ATTR_DEADLINE_ATTEMPT]: m.attempt,
        [ATTR_LLM_DECISION]: m.decision,
        [ATTR_ERROR_TYPE]: failure,
      }),
    },
    parent,
  )
  // An array attribute: `defined()` takes scalars only.
  if (m.finishReason !== undefined)
    span.setAttribute(ATTR_GEN_AI_RESPONSE_FINISH_REASONS, [m.finishReason])
  const asked = m.request
  if (asked !== undefined) {
    span.setAttributes(
      defined({
        [ATTR_GEN_AI_REQUEST_MAX_TOKENS]: asked.maxTokens,
        [ATTR_GEN_AI_REQUEST_TEMPERATURE]: asked.temperature,
        [ATTR_GEN_AI_REQUEST_TOP_P]: asked.topP,
        [ATTR_GEN_AI_REQUEST_TOP_K]: asked.topK,
        [ATTR_GEN_AI_REQUEST_SEED]: asked.seed,
        [ATTR_GEN_AI_REQUEST_FREQUENCY_PENALTY]: asked.frequencyPenalty,
        [ATTR_GEN_AI_REQUEST_PRESENCE_PENALTY]: asked.presencePenalty,
        [ATTR_GEN_AI_OUTPUT_TYPE]: asked.outputType,
      }),
    )
    if (asked.stopSequences !== undefined)
      span.setAttribute(ATTR_GEN_AI_REQUEST_STOP_SEQUENCES, [...asked.stopSequences])
  }
  if (failure !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: failure })
  span.end(end)
}
