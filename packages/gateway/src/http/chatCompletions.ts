import { randomUUID } from 'node:crypto'
import { currentDeadline, Deadline, isDeadlineExceeded } from '@hourglass/core'
import type { Request, Response } from 'express'
import { targetKey } from '../call/createAdapters.js'
import { gateClientRetry, noteSent, refundClientRetry } from '../call/gateClientRetry.js'
import { leftByClient } from '../call/leftByClient.js'
import type { ModelTarget } from '../config/gatewayConfigSchema.js'
import type { GatewayContext } from '../GatewayContext.js'
import {
  type AttemptRecord,
  type ChatRequest,
  type ChatResponse,
  CostBudget,
  callModel,
  isOutputTruncated,
  type ModelAdapter,
} from '../llm.js'
import { toOpenAIResponse } from '../openai/encode.js'
import { resolveModel } from '../routing/resolveModel.js'
import { endedInError } from './endedInError.js'
import { errorReply, reportDeadlineReply } from './errorReply.js'
import { flushedOrCut } from './flushedOrCut.js'
import { lostInTransit, watchTransit } from './lostInTransit.js'
import { modelNotFound } from './modelNotFound.js'
import { parseChatRequest } from './parseChatRequest.js'
import { loggedPathOf } from './pathOf.js'
import { refusedWhenReached } from './refusedWhenReached.js'
import { refuseUnpricedFields } from './refuseUnpricedFields.js'
import { refuseUntranslatable } from './refuseUntranslatable.js'
import { scopeOf } from './requestScope.js'
import { sendError } from './sendError.js'
import { sendJson } from './sendJson.js'
import { setProviderHeader } from './setProviderHeader.js'
import { streamCompletion } from './streamCompletion.js'
import type { CapField } from './untranslatableRefusal.js'

/**
 * `POST /v1/chat/completions`: an OpenAI request → the model's fallback list
 * → `callModel` (retries, key rotation through admission, per-provider
 * limits, fallback: one policy, not re-implemented here) → an OpenAI answer,
 * streamed or whole. Every failure becomes an OpenAI-shaped error.
 */
export function chatCompletions(ctx: GatewayContext) {
  return async (req: Request, res: Response): Promise<void> => {
    const startedAt = ctx.clock.now()
    const deadline = handlerDeadline(ctx, req)
    // The client's own timeout (x-stainless-timeout, openai-python's read timeout): until the answer's headers go out.
    const answerBy = clientBound(ctx, req)
    let headersSent = noop
    const fields: Record<string, unknown> = { path: loggedPathOf(req) }
    let status = 200
    // The model's fallback list, once resolved: a fallback's refusal names its entry.
    let targets: readonly ModelTarget[] = []
    // The cap field the client sent, if any: a refusal of the cap names it.
    let capField: CapField | undefined = 'max_tokens'
    try {
      const {
        model: requested,
        request,
        includeUsage,
      } = parseChatRequest(req.body, {
        defaultMaxTokens: ctx.config.policy.defaultMaxTokens,
      })
      fields['model'] = requested
      fields['stream'] = request.stream === true
      const resolved = resolveModel(ctx.config, requested, request)
      if (resolved === undefined) {
        throw modelNotFound(requested)
      }
      if (resolved.route) fields['route'] = `${resolved.route.side}:${resolved.name}`
      targets = resolved.targets
      capField = capFieldSent(req.body)
      refuseUntranslatable(ctx.config, targets, request, capField)
      // A cost bound must bound the bill: fields billed beyond the price table are refused under it.
      if (ctx.config.policy.maxCostUsdPerRequest !== undefined) {
        refuseUnpricedFields(request, resolved.targets, ctx.providerPrices)
      }
      const models = gateClientRetry(
        adaptersFor(ctx.adapters, resolved.targets),
        ctx.retryBudgets,
        ctx.metrics,
      )
      const streamed = request.stream === true
      // A whole answer is sent with its headers: the client's timeout is its
      // deadline (and the one told upstream). A stream is read as long as it
      // runs once it has started: the client's timeout only ends a wait for
      // its first event (`headersSent` lifts it then).
      const callDeadline = streamed ? deadline : (answerBy ?? deadline)
      if (streamed && answerBy !== undefined) headersSent = endAt(answerBy, deadline)
      const options = callOptions(ctx, models, request, callDeadline, fields)
      if (streamed) {
        const id = mintedId()
        status = await streamCompletion(
          ctx,
          res,
          Object.assign(options, {
            request: Object.assign({}, request, { stream: true as const }),
          }),
          {
            id,
            model: requested,
            includeUsage,
            // The id goes on the request line once a chunk carries it: a
            // stream that failed before its first event was an HTTP error
            // with no id, and a `responseId` there would name no answer.
            onFirstEvent: () => {
              fields['responseId'] = id
              headersSent()
            },
            answeredBy: () =>
              fields['provider'] === undefined
                ? undefined
                : `${fields['provider']}/${fields['upstreamModel']}`,
            failedBeforeFirstEvent: (error) =>
              refusedWhenReached(ctx.config, targets, fields, error, capField),
            capField,
          },
        )
      } else {
        const response = await callModel(options).catch(answerCutAtCap)
        fields['provider'] = response.provider
        fields['upstreamModel'] = response.model
        if (response.finishReason === 'error') {
          throw endedInError(
            `${response.provider}/${response.model}`,
            false,
            response.providerFinishReason,
          )
        }
        setProviderHeader(res, response.provider)
        res.setHeader('cache-control', 'no-store')
        const answer = toOpenAIResponse(response, { model: requested })
        fields['responseId'] = answer.id
        sendJson(res, 200, answer)
        const scope = scopeOf(res)
        if (scope !== undefined) scope.answered = true
        // Not all handed to the OS: the client is not reading (yet). Waited
        // for under the deadline, as a stream's writes are: a client that
        // never reads would otherwise hold its socket, and the answer
        // buffered in it, for as long as it stays connected.
        if (!res.writableFinished) {
          const release = watchTransit(res)
          try {
            await flushedOrCut(res, 'finish', deadline, () => cutAtDeadline(res, deadline))
          } finally {
            release()
          }
          // The client left before taking it all (a reset with part of it
          // still queued: Node says 'finish' all the same): a 499, as the
          // same departure from a stream is, not an answer delivered.
          if (scope?.cut !== true && (!res.writableFinished || lostInTransit(res))) {
            // Closed by the ingress backstop at the deadline, not by the client.
            if (isDeadlineExceeded(deadline.reason)) cutAtDeadline(res, deadline)
            else {
              status = 499
              if (scope !== undefined) scope.errorCode ??= 'client_closed'
            }
          }
        }
      }
    } catch (error) {
      const shaped = sendError(
        ctx,
        res,
        refusedWhenReached(ctx.config, targets, fields, error, capField),
        capField,
      )
      status = shaped.status
      fields['error'] = shaped.body.error.code
    } finally {
      // The deadline's backstop answered (its 504) while this handler's
      // answer was in hand: what the handler then wrote was swallowed. The
      // line says what the client got, with no id it was never given.
      if (status === 200 && res.headersSent && res.statusCode !== 200) {
        status = res.statusCode
        fields['responseId'] = undefined
      }
      headersSent()
      answerBy?.dispose()
      disposeHandlerDeadline(req)
      refundClientRetry(req, status)
      // A stream's status is 200 (or 499): the error it ended with, if any, is on the request's scope.
      fields['error'] ??= scopeOf(res)?.errorCode
      // The provider's id beside the client's only when they differ: an
      // OpenAI-compatible upstream's `chatcmpl-…` is passed on unchanged.
      if (fields['providerResponseId'] === fields['responseId']) {
        fields['providerResponseId'] = undefined
      }
      // Added to `fields`, not spread into a new record: on Node 20 each
      // field after a spread costs ~0.4 µs.
      fields['status'] = status
      fields['latencyMs'] = Math.round(ctx.clock.now() - startedAt)
      ctx.log(requestLevel(status, fields['error']), 'request', fields)
    }
  }
}

/**
 * The output cap field the client set, if any (else the request carries
 * `policy.defaultMaxTokens`, which a refusal of it must say): a refusal of
 * the cap names the field the client wrote — `max_completion_tokens`, what
 * the official clients' types now offer, was answered `param: "max_tokens"`,
 * a field it never sent. Both set are the same value (else refused first).
 * The body parsed, so it is an object.
 */
function capFieldSent(body: unknown): CapField | undefined {
  const json = body as Record<string, unknown>
  if (json['max_completion_tokens'] != null) return 'max_completion_tokens'
  return json['max_tokens'] != null ? 'max_tokens' : undefined
}

/**
 * A stream's `chatcmpl-…` id (a stream is answered before the provider names
 * its own, which comes with the finish), on the request line as
 * `responseId` once the stream starts: the id a client reports is the one
 * the operator searches.
 */
function mintedId(): string {
  return `chatcmpl-${randomUUID()}`
}

/**
 * The request line's level: `warn` for a failure the gateway answered (5xx),
 * and for an answer that failed after its 200 went out — a stream that ended
 * with an error event (`stream_interrupted`, `deadline_exceeded`, a drain's
 * `shutting_down`) or an answer cut because its client stopped reading —,
 * the same failure that, before the headers, is a 502, 503 or 504. A client
 * that left (499) is `info`: nothing went wrong on this side.
 */
function requestLevel(status: number, error: unknown): 'info' | 'warn' {
  return status >= 500 || (status < 300 && error !== undefined) ? 'warn' : 'info'
}

/**
 * The adapters serving a fallback list, in its order. Both the list (a
 * config entry's) and the adapters are fixed at start, so the answer is
 * made once per list and gateway, not per request (a key string and a map
 * lookup per target, ~5 µs a request).
 */
function adaptersFor(
  adapters: ReadonlyMap<string, ModelAdapter>,
  targets: readonly ModelTarget[],
): readonly ModelAdapter[] {
  let lists = adapterLists.get(adapters)
  if (lists === undefined) {
    lists = new WeakMap()
    adapterLists.set(adapters, lists)
  }
  let listed = lists.get(targets)
  if (listed === undefined) {
    listed = targets.flatMap((t) => {
      const adapter = adapters.get(targetKey(t))
      return adapter === undefined ? [] : [adapter]
    })
    lists.set(targets, listed)
  }
  return listed
}

const adapterLists = new WeakMap<
  ReadonlyMap<string, ModelAdapter>,
  WeakMap<readonly ModelTarget[], readonly ModelAdapter[]>
>()

/**
 * The gateway closed the connection of a client that did not read its
 * answer: 200, with the deadline's error code. A cut at the deadline (not a
 * drain's) is the request's expiry, as a stream's cut is: reported to the
 * ingress middleware, so its end says `expired` and its expire event fires
 * (action `app`) before the close that follows reads as an ordinary end.
 */
function cutAtDeadline(res: Response, deadline: Deadline): void {
  const shaped = errorReply(deadline.reason)
  reportDeadlineReply(res.req, shaped)
  const scope = scopeOf(res)
  if (scope === undefined) return
  scope.cut = true
  scope.errorCode ??= shaped.body.error.code
}

type CallOptions = Parameters<typeof callModel>[0]

/**
 * With `maxRecoveries: 0` callModel reports a `max_tokens` stop as
 * `OutputTruncatedError`, carrying the answer: the client's answer.
 */
function answerCutAtCap(error: unknown): ChatResponse {
  if (isOutputTruncated(error)) return error.response
  throw error
}

function callOptions(
  ctx: GatewayContext,
  models: readonly ModelAdapter[],
  request: ChatRequest,
  deadline: Deadline,
  fields: Record<string, unknown>,
): CallOptions & { deadline: Deadline } {
  const { policy } = ctx.config
  return {
    models,
    request,
    deadline,
    firstTokenTimeoutMs: ctx.firstTokenTimeoutMs,
    // An answer cut at the client's `max_tokens` is that answer, as OpenAI
    // gives it: 200 with `finish_reason: "length"`. callModel's default
    // recovery instead re-asked with twice the cap, then appended the cut
    // answer and a "continue" turn of its own, up to 3 more billed calls, and
    // failed with OutputTruncatedError (a 500): the cap is the client's to set.
    recovery: { maxRecoveries: 0 },
    retry: {
      maxAttempts: policy.maxAttempts,
      max529Retries: policy.max529Retries,
      priority: policy.priority,
      // `retryBudgets: false` in the gateway's options means none: callModel
      // would otherwise use the process-wide default.
      budgets: ctx.retryBudgets ?? false,
    },
    limits: {
      admission: ctx.admission,
      budget:
        policy.maxCostUsdPerRequest === undefined
          ? undefined
          : new CostBudget({
              limitUsd: policy.maxCostUsdPerRequest,
              prices: {},
              // llm's estimate holds a `prediction` as output itself.
              providerPrices: ctx.providerPrices,
            }),
    },
    onAttempt: (record: AttemptRecord) => {
      fields['attempts'] = record.attempt
      // Whether a client retry's charge stands: only an attempt that left counts.
      noteSent(record)
      // Who was asked last, whatever came of it: a request that failed, or
      // whose client left, names the provider it was billed by, as an
      // answered one does (a non-streamed answer sets them again from the
      // response, which names the model the provider ran).
      fields['provider'] = record.provider
      fields['upstreamModel'] = record.model
      // The provider's own id of the answer (the last attempt's, as the
      // provider above): what its support asks for. Logged only when the
      // client was given another (see the request line).
      fields['providerResponseId'] = record.responseId
      // The call's cost so far (llm sums every billed attempt into each
      // record): the request line's total even when no attempt answered — a
      // stream cut or left after tokens, a 2xx lost in transit, is billed.
      // Counted only under a cost budget (policy.maxCostUsdPerRequest): 0 otherwise.
      if (policy.maxCostUsdPerRequest !== undefined) fields['costUsd'] = record.costUsd
      // The answering attempt is the request line's news already (provider,
      // upstreamModel, attempts, costUsd): one info line per request, and a
      // warn line for every attempt that did not answer. `logLevel: 'debug'`
      // shows the answering one too, and an attempt whose client left (the
      // request line's 499 says so; nothing failed on either side).
      const left = leftByClient(record)
      const level = record.decision === 'success' || left ? 'debug' : 'warn'
      // Built only when written: at the default level the answering attempt's line is not.
      if (!ctx.logEnabled(level)) return
      ctx.log(level, 'attempt', {
        model: record.model,
        provider: record.provider,
        attempt: record.attempt,
        status: record.status,
        errorKind: record.errorKind,
        errorClass: record.errorClass,
        decision: left ? 'client_closed' : record.decision,
        delayMs: record.delayMs,
        latencyMs: Math.round(record.latencyMs),
        // Priced only under a cost budget: without one llm's record says 0
        // for every attempt, a cut stream's paid tokens included. Left out
        // rather than logged as a bill of nothing.
        ...(policy.maxCostUsdPerRequest === undefined ? {} : { costUsd: record.costUsd }),
        reason: record.reason,
        // The provider's own words (llm's record: cut, no keys); the line's
        // secret scrub runs over it as over every field.
        providerMessage: record.providerMessage,
        // The provider's name for the failed answer, for a support ticket.
        providerRequestId: record.providerRequestId,
      })
    },
  }
}

/**
 * The client SDK's timeout (`scope.answerBy`, from `x-stainless-timeout`
 * or openai-python's `x-stainless-read-timeout`, the sooner) less `replyReserveMs`, so the gateway's 504 goes out before the client's
 * timer fires. That timer covers the wait for the response's headers: the
 * whole of a non-streamed answer, a stream's wait for its first event.
 */
function clientBound(ctx: GatewayContext, req: Request): Deadline | undefined {
  const answerBy = scopeOf(req)?.answerBy
  if (answerBy === undefined) return undefined
  return answerBy.child(Math.max(0, answerBy.remaining() - ctx.replyReserveMs))
}

/** Ends `deadline` when `bound` ends (its reason: a 504 at its expiry), until the release is called. */
function endAt(bound: Deadline, deadline: Deadline): () => void {
  return bound.onDone((reason) => deadline.cancel(reason))
}

function noop(): void {}

/**
 * The call's own deadline ends `replyReserveMs` before the request's, so
 * when time runs out this handler — not the ingress middleware's plain
 * 504 — writes the OpenAI-shaped 504 (or the stream's error event). The
 * middleware's answer stays the backstop. Made once per request: the body
 * read (`jsonBody`) starts it, the handler takes it over and disposes it.
 */
export function handlerDeadline(
  ctx: Pick<GatewayContext, 'clock' | 'config' | 'replyReserveMs'>,
  req: Request,
): Deadline {
  let deadline = handlerDeadlines.get(req)
  if (deadline === undefined) {
    deadline = newHandlerDeadline(ctx, req)
    handlerDeadlines.set(req, deadline)
  }
  return deadline
}

/** Ends the request's handler deadline (its timer and links) and forgets it. */
export function disposeHandlerDeadline(req: Request): void {
  const deadline = handlerDeadlines.get(req)
  if (deadline === undefined) return
  handlerDeadlines.delete(req)
  deadline.dispose()
}

const handlerDeadlines = new WeakMap<Request, Deadline>()

function newHandlerDeadline(
  ctx: Pick<GatewayContext, 'clock' | 'config' | 'replyReserveMs'>,
  req: Request,
): Deadline {
  const parent = (req as Request & { deadline?: Deadline }).deadline ?? currentDeadline()
  if (parent === undefined) {
    // Mounted without deadline(): the config's default budget, on our own.
    return Deadline.after(ctx.config.deadline.defaultMs - ctx.replyReserveMs, { clock: ctx.clock })
  }
  if (parent.observe) {
    // The app's deadline() ahead of the router owns the request, in dark
    // mode: it enforces nothing, and a child of it inherited `observe` — a
    // hung provider was never cut, not at the gateway's own `defaultMs`
    // either. The config's default budget, as mounted without one, still
    // ended by the request's cancel (the client left, a drain): an
    // observe-only deadline's signal aborts only then.
    return Deadline.after(ctx.config.deadline.defaultMs - ctx.replyReserveMs, {
      clock: ctx.clock,
      signal: parent.signal,
    })
  }
  return parent.child(Math.max(0, parent.remaining() - ctx.replyReserveMs))
}
