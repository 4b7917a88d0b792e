import type { LlmAttemptMessage } from '@hourglass/llm'
import type { Attributes, Meter } from '@opentelemetry/api'
import {
  ATTR_BULLMQ_JOB_NAME,
  ATTR_DEADLINE_ACTION,
  ATTR_DEADLINE_ATTEMPT,
  ATTR_DEADLINE_CALL_KIND,
  ATTR_DEADLINE_INVALID_JOB_FIELD,
  ATTR_DEADLINE_JOB_REFUSED_REASON,
  ATTR_DEADLINE_MODE,
  ATTR_DEADLINE_RETRY_OUTCOME,
  ATTR_DEADLINE_RETRY_REASON,
  ATTR_DEADLINE_RETRY_WHY,
  ATTR_DEADLINE_SLICE,
  ATTR_DEADLINE_SOURCE,
  ATTR_DEADLINE_STAGE,
  ATTR_ERROR_TYPE,
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_PROVIDER_NAME,
  ATTR_GEN_AI_REQUEST_MODEL,
  ATTR_GEN_AI_RESPONSE_MODEL,
  ATTR_GEN_AI_TOKEN_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_LLM_PROVIDER,
  ATTR_MESSAGING_DESTINATION_NAME,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  type DeadlineStage,
  METRIC_CLIENT_CLOSED,
  METRIC_EGRESS_REMAINING,
  METRIC_EXCEEDED,
  METRIC_GEN_AI_CLIENT_OPERATION_DURATION,
  METRIC_GEN_AI_CLIENT_OPERATION_TIME_TO_FIRST_CHUNK,
  METRIC_GEN_AI_CLIENT_TOKEN_USAGE,
  METRIC_GRPC_FAILED_AFTER_ANSWER,
  METRIC_INGRESS_REMAINING,
  METRIC_INVALID_JOB,
  METRIC_JOB_REFUSED,
  METRIC_RETRIES,
  METRIC_RPC_CLIENT_CALL_DURATION,
  METRIC_RPC_SERVER_CALL_DURATION,
  METRIC_SUCCEEDED,
} from './attributes.js'
import { grpcTargetServer } from './grpcTargetServer.js'
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
  modelAttemptErrorType,
  modelSkippedReason,
  modelStoppedByCaller,
  stoppedByCaller,
} from './handlers.js'
import { inModelSend } from './inModelSend.js'
import { providerText } from './providerText.js'
import {
  grpcErrorType,
  rpcAttributes,
  rpcConventions,
  rpcStatusAttributes,
  STABLE_RPC,
} from './rpcConventions.js'

/**
 * Budgets span milliseconds to minutes, in seconds: the default histogram
 * buckets (0…10 000) would put every one of them in the first few.
 */
const BUDGET_BUCKETS_S = [
  0, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300,
]

/** The GenAI conventions' advice for `gen_ai.client.operation.duration` and `…time_to_first_chunk`, in s. */
const GEN_AI_DURATION_BUCKETS_S = [
  0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
]
/** The GenAI conventions' advice for `gen_ai.client.token.usage`: powers of 4. */
const GEN_AI_TOKEN_BUCKETS = [
  1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864,
]

/** The RPC conventions' advice for `rpc.client.call.duration` and `rpc.server.call.duration`, in s. */
const RPC_DURATION_BUCKETS_S = [
  0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10,
]

/** Deadlines count in ms; OpenTelemetry's duration metrics are in seconds. */
const seconds = (ms: number) => ms / 1000

/**
 * HTTP attempts sent for a model attempt, by their handle: counted as the
 * model attempt (`llm`), not as `http`. Their end is announced outside the
 * model send's context (from undici's callbacks), so it is known by the
 * handle seen at their start. Shared by every set of handlers, not one
 * set's own: an attempt in flight across `disable()` and `enable()` (which
 * make new handlers) starts under one set and ends under the next, and was
 * counted as `http` too. Never deleted at the end (a WeakSet lets the handle
 * go with its attempt): two instrumentations at once each read it.
 */
const MODEL_SENDS = new WeakSet<object>()

/**
 * HTTP attempts whose `attempt` message some set of handlers heard. One
 * whose start nobody heard (the instrumentation was enabled, or enabled
 * again, while it was in flight) may be a model send — only its start says
 * so — and counted as `http` at its end, the call was counted twice (`http`
 * and `llm`): such an end is in no `calls.succeeded` series, as its start is
 * in no `egress.remaining` sample. Shared, as `MODEL_SENDS` is.
 */
const HEARD_SENDS = new WeakSet<object>()

/**
 * Metrics for the Hourglass channels. Attributes are low-cardinality on
 * purpose: no URLs, no request ids — slice names, stages, reasons and attempt
 * numbers only.
 */
export function metricHandlers(
  meter: Meter,
  /**
   * gRPC calls whose expiry was counted (see `grpc.serverExpire`): the
   * instrumentation's, kept across `disable()`/`enable()` and
   * `setMeterProvider()` (which make new handlers), or a dark-mode call
   * whose two expiries straddled one was counted twice.
   */
  grpcExpired: WeakSet<object> = new WeakSet<object>(),
): Handlers {
  const conventions = rpcConventions()
  const ingressRemaining = meter.createHistogram(METRIC_INGRESS_REMAINING, {
    description: 'Time left on a request deadline when it started',
    unit: 's',
    advice: { explicitBucketBoundaries: BUDGET_BUCKETS_S },
  })
  const egressRemaining = meter.createHistogram(METRIC_EGRESS_REMAINING, {
    description: 'Time left on the deadline when an outbound attempt was sent',
    unit: 's',
    advice: { explicitBucketBoundaries: BUDGET_BUCKETS_S },
  })
  const exceeded = meter.createCounter(METRIC_EXCEEDED, {
    description: 'Times a deadline ran out, by stage (arrival, handler, queued, slice, upstream)',
    unit: '{deadline}',
  })
  const clientClosed = meter.createCounter(METRIC_CLIENT_CLOSED, {
    description: 'Callers that went away before their response finished',
    unit: '{request}',
  })
  const retries = meter.createCounter(METRIC_RETRIES, {
    description: 'Retry decisions, by outcome (retried or skipped) and reason',
    unit: '{decision}',
  })
  const succeeded = meter.createCounter(METRIC_SUCCEEDED, {
    description:
      'Outbound calls that succeeded, by the attempt that succeeded (a rising share of attempt 2 foretells a rate limit)',
    unit: '{call}',
  })
  const invalidJobs = meter.createCounter(METRIC_INVALID_JOB, {
    description:
      'Job attempts that ran without a deadline because the one stored with the job is malformed, by queue, job name and field',
    unit: '{attempt}',
  })
  const jobsRefused = meter.createCounter(METRIC_JOB_REFUSED, {
    description:
      'Jobs addWithDeadline refused because they could not run in time (or, observe-only, would have), by queue, job name, reason and action',
    unit: '{job}',
  })
  const failedAfterAnswer = meter.createCounter(METRIC_GRPC_FAILED_AFTER_ANSWER, {
    description:
      'gRPC handlers that failed after they had answered (the answer stood; the error reached no caller), by method and error type',
    unit: '{call}',
  })
  // The GenAI conventions' client metrics, so dashboards built on them (not
  // on Hourglass's names) see @hourglass/llm's model attempts.
  const genAiDuration = meter.createHistogram(METRIC_GEN_AI_CLIENT_OPERATION_DURATION, {
    description: 'GenAI operation duration',
    unit: 's',
    advice: { explicitBucketBoundaries: GEN_AI_DURATION_BUCKETS_S },
  })
  // A stream's wait for its first token: what its reader waits through, which
  // the duration (to the stream's end) hides behind the answer's length.
  const genAiFirstChunk = meter.createHistogram(
    METRIC_GEN_AI_CLIENT_OPERATION_TIME_TO_FIRST_CHUNK,
    {
      description: 'Time to receive the first chunk of a streamed answer',
      unit: 's',
      advice: { explicitBucketBoundaries: GEN_AI_DURATION_BUCKETS_S },
    },
  )
  const genAiTokens = meter.createHistogram(METRIC_GEN_AI_CLIENT_TOKEN_USAGE, {
    description: 'Number of input and output tokens used',
    unit: '{token}',
    advice: { explicitBucketBoundaries: GEN_AI_TOKEN_BUCKETS },
  })
  // The RPC conventions' call durations, so RPC dashboards (latency and
  // error rate by method) see @hourglass/grpc's calls as any gRPC
  // instrumentation's: the gRPC messages carry each call's duration and status.
  const rpcClientDuration = meter.createHistogram(METRIC_RPC_CLIENT_CALL_DURATION, {
    description: 'Measures the duration of an outgoing Remote Procedure Call (RPC).',
    unit: 's',
    advice: { explicitBucketBoundaries: RPC_DURATION_BUCKETS_S },
  })
  const rpcServerDuration = meter.createHistogram(METRIC_RPC_SERVER_CALL_DURATION, {
    description: 'Measures the duration of an incoming Remote Procedure Call (RPC).',
    unit: 's',
    advice: { explicitBucketBoundaries: RPC_DURATION_BUCKETS_S },
  })
  /**
   * What an ingress's handler had left when it started. Not a call `strict`
   * refused (it never ran; its budget is only the fallback), nor one with no
   * deadline (a gRPC stream that came with none: nothing to measure).
   */
  const recordIngress = (
    m: { refused: boolean; deadline: { remaining(): number }; source: string; mode: string },
    attributes?: Attributes,
  ) => {
    if (m.refused) return
    const remaining = m.deadline.remaining()
    if (!Number.isFinite(remaining)) return
    ingressRemaining.record(seconds(remaining), {
      [ATTR_DEADLINE_SOURCE]: m.source,
      [ATTR_DEADLINE_MODE]: m.mode,
      ...attributes,
    })
  }
  const countExceeded = (stage: DeadlineStage, slice?: string) =>
    exceeded.add(1, defined({ [ATTR_DEADLINE_STAGE]: stage, [ATTR_DEADLINE_SLICE]: slice }))

  /** One model attempt (a request to the model) in the GenAI client metrics. */
  const recordGenAi = (m: LlmAttemptMessage) => {
    // Never sent (llm could not build the request): no GenAI operation took
    // place, and its 0 s sample with an error.type would pull the latency
    // percentiles down. The retries counter still counts its failure.
    if (m.sent === false) return
    const attributes = defined({
      [ATTR_GEN_AI_OPERATION_NAME]: genAiOperation(m),
      [ATTR_GEN_AI_PROVIDER_NAME]: genAiProvider(m),
      // The adapter's name: one series per configured adapter, as before the
      // provider name stopped being it (a config's few, not per request).
      [ATTR_LLM_PROVIDER]: m.provider,
      // Blank when an adapter (or its answer) named none: no model is better than a blank series.
      [ATTR_GEN_AI_REQUEST_MODEL]: m.model || undefined,
      // The provider's word, bounded (see providerText): a series holds it until the process ends.
      [ATTR_GEN_AI_RESPONSE_MODEL]: providerText(m.responseModel) || undefined,
      [ATTR_SERVER_ADDRESS]: m.serverAddress,
      [ATTR_SERVER_PORT]: m.serverAddress === undefined ? undefined : m.serverPort,
    })
    const timed = defined({ ...attributes, [ATTR_ERROR_TYPE]: modelAttemptErrorType(m) })
    if (Number.isFinite(m.latencyMs)) genAiDuration.record(seconds(Math.max(0, m.latencyMs)), timed)
    // Streamed attempts whose first token came only (the conventions: not
    // for a whole answer); one broken after it keeps its error.type.
    const firstChunk = firstChunkSeconds(m)
    if (firstChunk !== undefined) genAiFirstChunk.record(firstChunk, timed)
    // Only what the provider reported (llm's estimate when it did not is not usage).
    if (m.inputTokens !== undefined)
      genAiTokens.record(m.inputTokens, { ...attributes, [ATTR_GEN_AI_TOKEN_TYPE]: 'input' })
    if (m.outputTokens !== undefined)
      genAiTokens.record(m.outputTokens, { ...attributes, [ATTR_GEN_AI_TOKEN_TYPE]: 'output' })
  }

  return {
    express: {
      start(m) {
        recordIngress(m)
      },
      expire(m) {
        countExceeded(m.stage, m.slice)
      },
      clientClosed() {
        clientClosed.add(1)
      },
    },
    core: {
      sliceEnd(m) {
        // Dark mode's overruns too, as a request's observed expiry is counted.
        if (m.outcome === 'exceeded' || m.outcome === 'observed') countExceeded('slice', m.slice)
      },
    },
    fetch: {
      attempt(m) {
        // Announced as it is dispatched, in the context of the code sending it.
        HEARD_SENDS.add(m.handle)
        if (inModelSend()) MODEL_SENDS.add(m.handle)
        // A retry counts when it is sent, not when it is announced: one
        // announced and then abandoned (the caller left, the deadline ended
        // during its Retry-After wait) ends in a retry-skipped instead.
        if (m.retryReason !== undefined) {
          retries.add(1, {
            [ATTR_DEADLINE_RETRY_OUTCOME]: 'retried',
            [ATTR_DEADLINE_RETRY_REASON]: m.retryReason,
            [ATTR_DEADLINE_CALL_KIND]: 'http',
          })
        }
        // One sample per attempt: a hop that follows a redirect is part of its attempt.
        if (m.redirect !== undefined || !Number.isFinite(m.remainingMs)) return
        egressRemaining.record(seconds(m.remainingMs), {
          // Known methods only: any other token is `_OTHER`, not a series of its own.
          [ATTR_HTTP_REQUEST_METHOD]: httpMethod(m.method),
          [ATTR_DEADLINE_ATTEMPT]: m.attempt,
        })
      },
      attemptEnd(m) {
        // The upstream said its own deadline ran out (504 + x-deadline-expired):
        // from the attempt, not its retry-skipped, which fetch publishes only
        // when the call may retry — never under `retry: false`, so never for
        // llm's model attempts, the gateway hop of an API's chain.
        if (m.upstreamDeadline === true) countExceeded('upstream')
        // A model send's (counted as `llm`), or one whose start nobody heard (maybe one).
        if (MODEL_SENDS.has(m.handle) || !HEARD_SENDS.has(m.handle)) return
        // A redirect is not the call's answer: the hop that follows it is
        // (fetch follows 301, 302, 303, 307 and 308; another 3xx is final).
        // An answer its caller stopped reading once part of it had come
        // (`res.body.cancel()` after a chunk, "enough") got its answer: the
        // stop's code (`AbortError`, a `TimeoutError`) is no failure, as its
        // span says; counted by that code, such a call was in no series at
        // all. Not a stop before any of its body came (the status alone, then
        // nothing): the same rule as a model's stream, whose first token is
        // its answer's first part.
        const failed = m.errorCode !== undefined && !(stoppedByCaller(m) && m.bytesReceived > 0)
        // A redirect the caller gets as its answer (`redirect: 'manual'`, a
        // 3xx without `Location`) is the last hop, and the answer: fetch says
        // which (`followed`); the interceptor alone cannot, and is not counted.
        const followedRedirect =
          m.statusCode !== undefined && isRedirect(m.statusCode) && m.followed !== false
        if (!failed && (m.statusCode === undefined || (m.statusCode < 400 && !followedRedirect))) {
          succeeded.add(1, {
            [ATTR_DEADLINE_ATTEMPT]: m.attempt,
            [ATTR_DEADLINE_CALL_KIND]: 'http',
          })
        }
      },
      retrySkipped(m) {
        retries.add(1, {
          [ATTR_DEADLINE_RETRY_OUTCOME]: 'skipped',
          [ATTR_DEADLINE_RETRY_REASON]: m.reason,
          [ATTR_DEADLINE_RETRY_WHY]: m.why,
          [ATTR_DEADLINE_CALL_KIND]: 'http',
        })
      },
    },
    llm: {
      attempt(m) {
        recordGenAi(m)
        if (endedInError(m)) {
          // Returned, but ended in an error after its first token: no answer
          // got, and not retried, as the same stream cut by an error frame.
          retries.add(1, {
            [ATTR_DEADLINE_RETRY_OUTCOME]: 'skipped',
            [ATTR_DEADLINE_RETRY_REASON]: ENDED_IN_ERROR_TYPE,
            [ATTR_DEADLINE_RETRY_WHY]: ENDED_IN_ERROR_WHY,
            [ATTR_DEADLINE_CALL_KIND]: 'llm',
          })
        } else if (
          m.decision === 'success' ||
          (modelStoppedByCaller(m) && m.firstTokenMs !== undefined)
        ) {
          // The attempt on the model that answered: a fallback's first answer is attempt 1.
          // Also one whose output came and whose caller then stopped it ("stop
          // generating", a `break`): llm's decision says `fail`, but nothing
          // failed (its chat span and duration say so), and counted nowhere
          // else, every such call was missing from the calls that got their
          // answer, whatever the stop's reason. Not a stop before the first
          // token (a 200 and then nothing): no part of the answer came —
          // the same rule as an HTTP body's first bytes, above.
          succeeded.add(1, {
            [ATTR_DEADLINE_ATTEMPT]: m.modelAttempt ?? m.attempt,
            [ATTR_DEADLINE_CALL_KIND]: 'llm',
          })
        } else if (m.why !== undefined && !modelStoppedByCaller(m)) {
          // Failed, and this model was not tried again: as fetch's retry-skipped.
          // Not an answer its caller stopped (`why: 'aborted'`): nothing failed.
          retries.add(
            1,
            defined({
              [ATTR_DEADLINE_RETRY_OUTCOME]: 'skipped',
              [ATTR_DEADLINE_RETRY_REASON]: modelSkippedReason(m),
              [ATTR_DEADLINE_RETRY_WHY]: m.why,
              [ATTR_DEADLINE_CALL_KIND]: 'llm',
            }),
          )
        }
        // A retry counts when its attempt was sent, as fetch's does, not when
        // it is decided (a `retry` decision here): one decided and then
        // given up (the caller left, the deadline ended during its wait)
        // ends in a retry-skipped instead; one llm never sent (fetch refused
        // it at once) is counted above, as skipped by its own why for the
        // failure the retry was for (`modelSkippedReason`).
        if (m.retryReason !== undefined && m.sent !== false) {
          retries.add(1, {
            [ATTR_DEADLINE_RETRY_OUTCOME]: 'retried',
            [ATTR_DEADLINE_RETRY_REASON]: m.retryReason,
            [ATTR_DEADLINE_CALL_KIND]: 'llm',
          })
        }
      },
      retrySkipped(m) {
        retries.add(1, {
          [ATTR_DEADLINE_RETRY_OUTCOME]: 'skipped',
          [ATTR_DEADLINE_RETRY_REASON]: m.reason,
          [ATTR_DEADLINE_RETRY_WHY]: m.why,
          [ATTR_DEADLINE_CALL_KIND]: 'llm',
        })
      },
    },
    grpc: {
      // A gRPC server is an ingress as an Express app is: its calls' budgets
      // and its callers that leave go in the same metrics, with the method.
      serverStart(m) {
        recordIngress(m, rpcAttributes(m.method, conventions))
      },
      // Not a stream that came with no deadline, as `ingress.remaining` leaves
      // it out: its client cancelling is how a watch normally ends, and every
      // one of them counted as a caller that left.
      serverClientCancelled(m) {
        if (Number.isFinite(m.deadline.expiresAt)) clientClosed.add(1)
      },
      // As an HTTP request's: `arrival` (no time when it came in) or
      // `handler`, dark mode's observed ones too. The message names no slice.
      // Once per call: in dark mode our timer publishes the observed expiry,
      // and grpc-js's own `grpc-timeout` timer, answering later, a second
      // (`action: 'status'`) for the same deadline — one call counted two.
      serverExpire(m) {
        if (grpcExpired.has(m.deadline)) return
        grpcExpired.add(m.deadline)
        countExceeded(m.stage)
      },
      // A handler whose follow-up work (an audit write, a cleanup) fails after
      // every answer: only a process warning otherwise. The method and the
      // error's class (its stable code) are bounded; its message is not.
      serverFailedAfterAnswer(m) {
        failedAfterAnswer.add(1, {
          ...rpcAttributes(m.method, conventions),
          [ATTR_ERROR_TYPE]: errorType(m.error),
        })
      },
      // Every call that reached the server's interceptor, a call `strict`
      // refused included: it was answered (INVALID_ARGUMENT), as its span says.
      serverEnd(m) {
        if (!Number.isFinite(m.elapsedMs)) return
        rpcServerDuration.record(
          seconds(Math.max(0, m.elapsedMs)),
          rpcCallAttributes(m.method, m.code, 'server'),
        )
      },
      // Every call, one refused unsent included: it failed with the status
      // the client library made up — DEADLINE_EXCEEDED for want of budget,
      // CANCELLED under a cancelled deadline (a client that left) —, as
      // grpc-js fails a call whose deadline has passed and as our calls
      // cancelled before they were sent are recorded. Left out, the budget
      // refusals Hourglass exists to make were missing from the error rate.
      clientEnd(m) {
        if (!Number.isFinite(m.elapsedMs)) return
        rpcClientDuration.record(
          seconds(Math.max(0, m.elapsedMs)),
          rpcCallAttributes(m.method, m.code, 'client', grpcTargetServer(m.target)),
        )
      },
    },
    bullmq: {
      // Reached a worker after its deadline (observed in dark mode, where it ran anyway).
      expire() {
        countExceeded('queued')
      },
      // Ran out while running: each attempt whose span gets a `handler`
      // exceeded event. Not a late job that was already counted `queued`.
      end(m) {
        if (ranOutWhileRunning(m)) countExceeded('handler')
      },
      // Adds that could never run in time: refused, or in dark mode the
      // ones enforcing would refuse (what a dark-mode rollout is read for).
      refuse(m) {
        jobsRefused.add(1, {
          [ATTR_MESSAGING_DESTINATION_NAME]: m.queue,
          [ATTR_BULLMQ_JOB_NAME]: m.name,
          [ATTR_DEADLINE_JOB_REFUSED_REASON]: m.reason,
          [ATTR_DEADLINE_ACTION]: m.outcome,
        })
      },
      // Corrupt job data runs unbounded: an operator needs to see it rise.
      // Queue and job name find the producer; the value found is never an
      // attribute (it is whatever was written to Redis: unbounded, maybe secret).
      invalid(m) {
        invalidJobs.add(1, {
          [ATTR_MESSAGING_DESTINATION_NAME]: m.queue,
          [ATTR_BULLMQ_JOB_NAME]: m.name,
          [ATTR_DEADLINE_INVALID_JOB_FIELD]: m.field,
        })
      },
    },
  }
}

/**
 * A gRPC call's duration attributes: its method and status by the stable
 * names whatever the opt-in (see `STABLE_RPC`: a stable metric's labels
 * must not change when the opt-in does), and `error.type` when the status
 * makes the span an error (the conventions' "if and only if it failed"). On
 * the client, the server it was sent to (`server.address`, `server.port`),
 * as its span says.
 */
function rpcCallAttributes(
  method: string,
  code: number,
  side: 'client' | 'server',
  server: Attributes = {},
): Attributes {
  return defined({
    ...rpcAttributes(method, STABLE_RPC),
    ...server,
    ...rpcStatusAttributes(code, STABLE_RPC),
    [ATTR_ERROR_TYPE]: grpcErrorType(code, side),
  })
}

/**
 * An attempt its deadline ran out on while it ran: stopped by it, returned
 * after it (unless dark mode's `expired` already says it reached the worker
 * too late), or, in dark mode, failed after it.
 */
function ranOutWhileRunning(m: { outcome: string; enforcedOutcome?: string | undefined }): boolean {
  if (m.outcome === 'deadline_exceeded') return true
  if (m.outcome === 'completed_late') return m.enforcedOutcome !== 'expired'
  return m.enforcedOutcome === 'deadline_exceeded'
}

/** The statuses fetch follows (`redirect: 'follow'`, its default). */
function isRedirect(status: number): boolean {
  return status === 301 || status === 302 || status === 303 || status === 307 || status === 308
}
