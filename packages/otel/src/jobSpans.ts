import type { Deadline } from '@hourglass/core'
import {
  type Context,
  context,
  defaultTextMapGetter,
  propagation,
  ROOT_CONTEXT,
  type Span,
  type SpanContext,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api'
import {
  ATTR_BULLMQ_JOB_NAME,
  ATTR_DEADLINE_ACTION,
  ATTR_DEADLINE_ATTEMPT,
  ATTR_DEADLINE_BUDGET_MS,
  ATTR_DEADLINE_ELAPSED_MS,
  ATTR_DEADLINE_INVALID_JOB_FIELD,
  ATTR_DEADLINE_INVALID_JOB_REASON,
  ATTR_DEADLINE_JOB_REFUSED_DELAY_MS,
  ATTR_DEADLINE_JOB_REFUSED_REASON,
  ATTR_DEADLINE_LATE_MS,
  ATTR_DEADLINE_MODE,
  ATTR_DEADLINE_OUTCOME,
  ATTR_DEADLINE_REMAINING_AT_END_MS,
  ATTR_DEADLINE_REMAINING_MS,
  ATTR_DEADLINE_RETRY_DELAY_MS,
  ATTR_DEADLINE_RETRY_REASON,
  ATTR_DEADLINE_RETRY_WHY,
  ATTR_DEADLINE_STAGE,
  ATTR_DEADLINE_STALLED,
  ATTR_ERROR_TYPE,
  ATTR_MESSAGING_DESTINATION_NAME,
  ATTR_MESSAGING_MESSAGE_ID,
  ATTR_MESSAGING_OPERATION_NAME,
  ATTR_MESSAGING_OPERATION_TYPE,
  ATTR_MESSAGING_SYSTEM,
  EVENT_DEADLINE_EXCEEDED,
  EVENT_DEADLINE_INVALID_JOB,
  EVENT_DEADLINE_JOB_REFUSED,
  EVENT_DEADLINE_RETRY,
  EVENT_DEADLINE_RETRY_SKIPPED,
  SPAN_JOB_PREFIX,
} from './attributes.js'
import { recordSetter } from './carriers.js'
import type { DeadlineSpans } from './deadlineSpans.js'
import { defined, errorType, type Handlers, ms } from './handlers.js'
import { ranOutAt } from './ranOutAt.js'
import { tracedSpan, tracingSuppressed } from './tracedSpan.js'

type BullmqHandlers = NonNullable<Handlers['bullmq']>
type ExpireMessage = Parameters<NonNullable<BullmqHandlers['expire']>>[0]
type JobMessage = Parameters<NonNullable<BullmqHandlers['start']>>[0]

/**
 * Spans for @hourglass/bullmq. The producer's trace context rides with the
 * job: on `enqueue` it is written (with the global propagator) into the
 * record stored with the job, and each attempt's CONSUMER span `process
 * <queue>` (from `start` to `end`) is its child — in the worker's process,
 * on whichever host. A job that reached a worker after its deadline gets a
 * span too, ended at once, with a `hourglass.deadline.exceeded` event at stage `queued`.
 * A job whose stored deadline is malformed runs without one and gets no span:
 * a `hourglass.deadline.invalid_job` event on the span active in the worker.
 */
export function bullmqTraceHandlers(tracer: Tracer, deadlineSpans: DeadlineSpans): BullmqHandlers {
  const { parentContext } = deadlineSpans
  const attempts = new WeakMap<Deadline, Span>()
  // When each attempt's span started, as `performance.now()`, and the time it
  // had then: its `handler` exceeded event is stamped when that ran out,
  // counted from here (see `ranOutAt`), not when bullmq announced the end.
  const attemptStarts = new WeakMap<Span, { at: number; remainingMs: number }>()
  // Observe-only: the expired job runs anyway, and its `start` follows at
  // once; the event goes on that attempt's span.
  let observedExpiry: ExpireMessage | undefined

  const startSpan = (m: JobMessage | ExpireMessage, mode: string | undefined): Span => {
    const { parent, creation } = producerContext(m.trace)
    return tracer.startSpan(
      SPAN_JOB_PREFIX + m.queue,
      {
        kind: SpanKind.CONSUMER,
        // The messaging conventions: a "Process" span SHOULD link to the
        // message's creation context; being its child is the optional extra.
        ...(creation ? { links: [{ context: creation }] } : {}),
        attributes: defined({
          [ATTR_MESSAGING_SYSTEM]: 'bullmq',
          [ATTR_MESSAGING_OPERATION_NAME]: 'process',
          [ATTR_MESSAGING_OPERATION_TYPE]: 'process',
          [ATTR_MESSAGING_DESTINATION_NAME]: m.queue,
          [ATTR_MESSAGING_MESSAGE_ID]: m.jobId,
          [ATTR_BULLMQ_JOB_NAME]: m.name,
          [ATTR_DEADLINE_ATTEMPT]: m.attempt,
          [ATTR_DEADLINE_BUDGET_MS]: ms(m.budgetMs),
          [ATTR_DEADLINE_REMAINING_MS]: ms(m.remainingMs),
          [ATTR_DEADLINE_MODE]: mode,
        }),
      },
      parent,
    )
  }

  return {
    enqueue(m) {
      propagation.inject(parentContext(m.deadline), m.trace, recordSetter)
    },
    expire(m) {
      // A worker running with tracing suppressed: no span (see `start`).
      if (tracingSuppressed()) return
      if (m.observe) {
        observedExpiry = m
        queueMicrotask(() => {
          if (observedExpiry === m) observedExpiry = undefined
        })
        return
      }
      const span = startSpan(m, 'enforce')
      queuedEvent(span, m)
      span.setAttributes({
        [ATTR_DEADLINE_OUTCOME]: 'expired',
        [ATTR_DEADLINE_REMAINING_AT_END_MS]: 0,
        [ATTR_ERROR_TYPE]: 'DEADLINE_EXCEEDED',
      })
      span.setStatus({ code: SpanStatusCode.ERROR, message: 'reached a worker after its deadline' })
      span.end()
    },
    start(m) {
      // The span's parent is the producer's context, read from the job, but
      // the worker runs its jobs in the context it was started in: where
      // that has tracing suppressed, it makes no span, as the SDK would.
      if (tracingSuppressed()) return
      const span = startSpan(m, m.deadline.observe ? 'observe' : 'enforce')
      const expiry = observedExpiry
      if (expiry && expiry.jobId === m.jobId && expiry.queue === m.queue) {
        queuedEvent(span, expiry)
        observedExpiry = undefined
      }
      attempts.set(m.deadline, span)
      attemptStarts.set(span, { at: performance.now(), remainingMs: m.remainingMs })
      deadlineSpans.set(m.deadline, span)
    },
    // A job that could never run in time, refused at the add (or, in dark
    // mode, added all the same): no worker sees it, so it has no span; the
    // event goes on the producer's, as a retry it skipped would. Unheard,
    // dark mode — rolled out to find what enforcing would stop — said
    // nothing of the adds that switching to enforce refuses.
    refuse(m) {
      tracedSpan(parentContext(m.deadline))?.addEvent(
        EVENT_DEADLINE_JOB_REFUSED,
        defined({
          [ATTR_MESSAGING_DESTINATION_NAME]: m.queue,
          [ATTR_BULLMQ_JOB_NAME]: m.name,
          // Only an observed one was added: a refused job has no id.
          [ATTR_MESSAGING_MESSAGE_ID]: m.outcome === 'observed' ? m.jobId : undefined,
          [ATTR_DEADLINE_JOB_REFUSED_REASON]: m.reason,
          [ATTR_DEADLINE_JOB_REFUSED_DELAY_MS]: ms(m.delayMs),
          [ATTR_DEADLINE_REMAINING_MS]: ms(m.remainingMs),
          [ATTR_DEADLINE_ACTION]: m.outcome,
        }),
      )
    },
    invalid(m) {
      // The job runs with no deadline, so it gets no span of ours: the event
      // goes on the span active in the worker (BullMQ's telemetry, or one the
      // application made), if any. It names the job, since that span may not
      // be the job's; the value found is never recorded (it may be anything).
      // None where tracing is suppressed.
      tracedSpan()?.addEvent(EVENT_DEADLINE_INVALID_JOB, {
        [ATTR_MESSAGING_DESTINATION_NAME]: m.queue,
        [ATTR_MESSAGING_MESSAGE_ID]: m.jobId,
        [ATTR_BULLMQ_JOB_NAME]: m.name,
        [ATTR_DEADLINE_ATTEMPT]: m.attempt,
        [ATTR_DEADLINE_INVALID_JOB_FIELD]: m.field,
        [ATTR_DEADLINE_INVALID_JOB_REASON]: m.reason,
      })
    },
    end(m) {
      const span = attempts.get(m.deadline)
      if (!span) return
      attempts.delete(m.deadline)
      span.setAttributes(
        defined({
          [ATTR_DEADLINE_OUTCOME]: m.outcome,
          [ATTR_DEADLINE_ELAPSED_MS]: ms(m.elapsedMs),
          [ATTR_DEADLINE_REMAINING_AT_END_MS]: ms(m.remainingMs),
        }),
      )
      // The failure a retry (or its refusal) was about: the attempt's error.type.
      const reason = errorType(m.error)
      // Stamped when the attempt's deadline ran out, as a request's is when
      // its deadline fires: bullmq says so only at the end, which in dark
      // mode, or for a processor that ignored its aborted signal, is whenever
      // it returned or threw. The action says what came of it; `elapsed_ms`
      // is the whole run, to that end.
      const now = performance.now()
      const started = attemptStarts.get(span)
      const ranOutTime =
        started === undefined ? now : ranOutAt(m.deadline, started.remainingMs, started.at, now)
      const ranOut = (action: string) =>
        span.addEvent(
          EVENT_DEADLINE_EXCEEDED,
          // No budget recorded (another producer's job): left out, not 0.
          defined({
            [ATTR_DEADLINE_STAGE]: 'handler',
            [ATTR_DEADLINE_BUDGET_MS]: ms(m.budgetMs),
            [ATTR_DEADLINE_ELAPSED_MS]: ms(m.elapsedMs) ?? 0,
            [ATTR_DEADLINE_ACTION]: action,
          }),
          ranOutTime,
        )
      switch (m.outcome) {
        case 'completed':
        case 'deferred':
          break
        case 'completed_late':
          // In dark mode, reached too late (`enforcedOutcome: expired`): the
          // queued event already says what enforcement would have done.
          if (m.enforcedOutcome !== 'expired') ranOut(m.deadline.observe ? 'observed' : 'completed')
          break
        case 'deadline_exceeded':
          ranOut('failed')
          fail(span, 'DEADLINE_EXCEEDED', 'stopped by its deadline')
          break
        case 'no_time_to_retry':
          span.addEvent(EVENT_DEADLINE_RETRY_SKIPPED, {
            [ATTR_DEADLINE_ATTEMPT]: m.attempt,
            [ATTR_DEADLINE_RETRY_REASON]: reason,
            [ATTR_DEADLINE_RETRY_WHY]: 'no-budget',
          })
          fail(span, errorType(m.error), 'no time left to retry')
          break
        case 'retry':
          // As fetch's and llm's retry events: the failure retried and the
          // back-off before the next attempt (bullmq's `retryDelayMs`).
          span.addEvent(
            EVENT_DEADLINE_RETRY,
            defined({
              [ATTR_DEADLINE_ATTEMPT]: m.attempt + 1,
              [ATTR_DEADLINE_RETRY_REASON]: reason,
              [ATTR_DEADLINE_RETRY_DELAY_MS]: ms(m.retryDelayMs),
            }),
          )
          fail(span, errorType(m.error), 'attempt failed')
          break
        case 'failed':
          fail(span, errorType(m.error), 'failed')
          break
        case 'lock_lost':
          // Stopped: its worker lost the job's lock, and another may run it.
          fail(span, errorType(m.error), 'lock lost: stopped, another worker may run the job')
          break
      }
      // Dark mode: what enforcement would have done, reported as the ingress
      // reports an observed expiry — an event with action `observed` — while
      // the status stays the attempt's own (enforcement changed nothing).
      if (m.enforcedOutcome === 'deadline_exceeded') ranOut('observed')
      else if (m.enforcedOutcome === 'no_time_to_retry') {
        span.addEvent(EVENT_DEADLINE_RETRY_SKIPPED, {
          [ATTR_DEADLINE_ATTEMPT]: m.attempt,
          [ATTR_DEADLINE_RETRY_REASON]: reason,
          [ATTR_DEADLINE_RETRY_WHY]: 'no-budget',
          [ATTR_DEADLINE_ACTION]: 'observed',
        })
      }
      span.end()
    },
  }
}

/**
 * The producer's context stored with the job, when it holds a valid span
 * context; otherwise the active one (BullMQ's own telemetry may have made a
 * span active), without a span it starts a trace.
 */
function producerContext(stored: Readonly<Record<string, string>> | undefined): {
  parent: Context
  creation: SpanContext | undefined
} {
  if (stored) {
    const extracted = propagation.extract(ROOT_CONTEXT, stored, defaultTextMapGetter)
    const creation = trace.getSpanContext(extracted)
    if (creation) return { parent: extracted, creation }
  }
  return { parent: context.active(), creation: undefined }
}

function queuedEvent(span: Span, m: ExpireMessage): void {
  span.addEvent(
    EVENT_DEADLINE_EXCEEDED,
    // A job that recorded no budget (another producer's) has none to report:
    // the attribute is left out rather than claiming it was added with 0 ms.
    defined({
      [ATTR_DEADLINE_STAGE]: 'queued',
      [ATTR_DEADLINE_BUDGET_MS]: ms(m.budgetMs),
      [ATTR_DEADLINE_LATE_MS]: m.lateMs,
      [ATTR_DEADLINE_STALLED]: m.stalled,
      [ATTR_DEADLINE_ACTION]: m.observe ? 'observed' : 'failed',
    }),
  )
}

function fail(span: Span, type: string, message: string): void {
  span.setAttribute(ATTR_ERROR_TYPE, type)
  span.setStatus({ code: SpanStatusCode.ERROR, message })
}
