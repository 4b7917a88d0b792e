import { type Deadline, isDeadlineExceeded } from '@hourglass/core'
import type { Response } from 'express'
import type { GatewayContext } from '../GatewayContext.js'
import { callModel, isProviderError, isStreamInterrupted, type StreamEvent } from '../llm.js'
import { OPENAI_SSE_DONE, OpenAIChunkEncoder, openAISseData } from '../openai/encode.js'
import { SseRecutter } from '../sse/SseRecutter.js'
import { beforeForeignEnd } from './beforeForeignEnd.js'
import { clientReadTimeoutMs } from './clientHeaders.js'
import { endedInError } from './endedInError.js'
import { type ErrorReply, errorReply, reportDeadlineReply } from './errorReply.js'
import { flushedOrCut } from './flushedOrCut.js'
import { logIfBug } from './logIfBug.js'
import { lostInTransit, watchTransit } from './lostInTransit.js'
import { type RequestScope, scopeOf } from './requestScope.js'
import { sendError } from './sendError.js'
import type { CapField } from './untranslatableRefusal.js'

/**
 * How long a started stream may go without a byte before the gateway writes
 * an SSE comment (`: keep-alive`), in ms. The providers keep their own
 * streams alive through a long silence — Anthropic's `ping` events while a
 * large tool argument is buffered or a model thinks without showing it,
 * the Responses API's `keepalive` event every 30 s — and the gateway does not
 * pass those on (llm reads them as nothing): without its own, a proxy or
 * load balancer in front of it (nginx's 60 s `proxy_read_timeout`, AWS ALB's
 * 60 s idle timeout) cut a stream that was still being answered. Well below
 * those; every SSE client (the official SDKs, `EventSource`) skips a
 * comment line.
 */
export const STREAM_KEEP_ALIVE_MS = 15_000

/** The keep-alive event: a comment, which no client reads as a chunk. */
export const SSE_KEEP_ALIVE = ': keep-alive\n\n'

/** The shortest keep-alive period a client's read timeout can ask for, in ms. */
export const MIN_STREAM_KEEP_ALIVE_MS = 1000

/**
 * The keep-alive's period for this stream: `STREAM_KEEP_ALIVE_MS`, or half
 * the client's read timeout when that is shorter (openai-python's
 * `X-Stainless-Read-Timeout`, at least `MIN_STREAM_KEEP_ALIVE_MS`). That
 * timeout is the longest silence its httpx takes between two reads of a
 * started stream: with `timeout=10`, a provider silent for 12 s mid-answer
 * (thinking unshown, a large tool argument buffered; the provider's own
 * keep-alives are not passed on) ended in `ReadTimeout` at 10 s, the answer
 * lost and billed, before the gateway's first comment at 15 s. A comment is
 * a few bytes, at most one a second: a client claiming a short timeout
 * costs nothing worth a trust option.
 */
function keepAliveEveryMs(
  headers: Readonly<Record<string, string | string[] | undefined>>,
): number {
  const readMs = clientReadTimeoutMs(headers)
  if (readMs === undefined) return STREAM_KEEP_ALIVE_MS
  return Math.min(STREAM_KEEP_ALIVE_MS, Math.max(MIN_STREAM_KEEP_ALIVE_MS, Math.floor(readMs / 2)))
}

export interface StreamReplyOptions {
  /** The `id` every chunk carries (`chatcmpl-…`): minted by the handler, which logs it. */
  id: string
  /** The model name reported in every chunk (the one the client asked for). */
  model: string
  /** Send a last chunk with usage (`stream_options.include_usage`). */
  includeUsage: boolean
  /** Called when the first event arrived, before the headers are written (the client's timeout ends there). */
  onFirstEvent?: (() => void) | undefined
  /** `provider/model` of the attempt that answered, for an error's message. */
  answeredBy?: (() => string | undefined) | undefined
  /** What a failure before the first event is answered as (a fallback's refusal, named): the failure itself by default. */
  failedBeforeFirstEvent?: ((error: unknown) => unknown) | undefined
  /** The output cap field the client sent: a failure before the first event names it (`errorReply`). */
  capField?: CapField | undefined
}

/**
 * Runs a streamed call and answers it as OpenAI's SSE.
 *
 * Nothing is written until the first event arrives: until then every retry
 * and fallback is invisible and a failure is an ordinary HTTP error (429,
 * 502, 504…). After it the status is 200 and cannot change, so a failure
 * ends the stream with one `data: {"error":{…}}` event and no `[DONE]` —
 * the official SDKs throw an `APIError` from the iterator on it — but for
 * the provider's output filter, which ends it as a `content_filter` finish
 * (`outputFiltered`). Every byte
 * goes out through an `SseRecutter`: only whole events, hence whole UTF-8
 * characters, are written. Returns the status for the log: what the client
 * saw, or 499 when it hung up before the end (nothing more is written then).
 */
export async function streamCompletion(
  ctx: GatewayContext,
  res: Response,
  options: Parameters<typeof callModel>[0] & { request: { stream: true }; deadline: Deadline },
  reply: StreamReplyOptions,
): Promise<number> {
  const stream = callModel(options)
  // The client's pace is the provider's: a client that reads slowly (or not
  // at all) leaves the rest of the answer in the provider's socket, not in
  // the gateway's heap (a 200k-token answer held +85 MB of heap, +100 MB RSS, per such client).
  stream.readAtConsumerPace()
  const events = stream[Symbol.asyncIterator]()
  let first: IteratorResult<StreamEvent>
  try {
    first = await events.next()
    // Nothing but an answer that ended in an error: an error before the
    // headers. Read to its end first (the finish is the last event), so the
    // attempt is recorded and the message can name who answered.
    if (endsInError(first)) {
      await events.next()
      throw endedInError(reply.answeredBy?.(), false, providerFinishReason(first))
    }
  } catch (error) {
    const shaped = sendError(
      ctx,
      res,
      reply.failedBeforeFirstEvent?.(error) ?? error,
      reply.capField,
    )
    reportDeadlineReply(res.req, shaped)
    return shaped.status
  }
  reply.onFirstEvent?.()
  const scope = scopeOf(res)
  // Time to first token is recorded at the first token (text, thinking, a
  // tool call), not at the first event: an answer with none — a finish
  // alone (an empty answer, a `content_filter` stop, a `length` stop while
  // the model thought silently) — starts its stream with its end, and
  // recorded, it read as a first token that never came (the whole silent
  // generation, or a filter's few ms, in the histogram).
  let tokenSeen = false
  // The client hanging up mid-stream is a 499 in the log, whatever ended the call.
  let clientLeft = false
  // The deadline ran out while the client was not reading: the gateway cut it.
  let cut = false
  const onClose = () => {
    if (res.writableFinished || cut) return
    // The deadline ran out first: the ingress middleware's backstop closed
    // the connection (it can only close it once a stream's headers are out)
    // while this handler was still unwinding its aborted call. A client that
    // leaves ends the deadline with `ClientClosedError`, never this.
    if (isDeadlineExceeded(options.deadline.reason)) onCut()
    else clientLeft = true
  }
  res.once('close', onClose)
  const encoder = new OpenAIChunkEncoder({
    id: reply.id,
    model: reply.model,
    includeUsage: reply.includeUsage,
  })
  const recutter = new SseRecutter()
  const onCut = () => {
    cut = true
    const shaped = errorReply(options.deadline.reason)
    // A cut at the deadline (not a drain's): the ingress span says expired.
    reportDeadlineReply(res.req, shaped)
    if (scope === undefined) return
    scope.cut = true
    // Its code only: cut because the client did not take the stream, not a
    // failure of the provider's (a client retry's charge is refunded, as a
    // non-streamed answer left unread is).
    scope.errorCode ??= shaped.body.error.code
  }
  /** A write waits for the client to take what it was sent (its socket full). */
  let waitingOnClient = false
  /** `ctx.clock.now()` at the last write: the keep-alive's silence is counted from it. */
  let wroteAt = ctx.clock.now()
  const write = async (text: string): Promise<void> => {
    const out = recutter.push(Buffer.from(text, 'utf8'))
    if (out === undefined || res.writableEnded || res.destroyed) return
    wroteAt = ctx.clock.now()
    if (res.write(out)) return
    waitingOnClient = true
    try {
      await flushedOrCut(res, 'drain', options.deadline, onCut)
    } finally {
      waitingOnClient = false
    }
  }
  const keepAliveMs = keepAliveEveryMs(res.req.headers)
  // One timer for the stream, not one per chunk: due `keepAliveMs`
  // after the last write, it writes the comment only when nothing went out
  // since, else waits out the rest of the silence.
  let keepAlive: unknown
  const keepAliveDue = (inMs: number) => {
    keepAlive = ctx.clock.setTimeout(onKeepAlive, inMs)
  }
  const onKeepAlive = () => {
    keepAlive = undefined
    if (res.writableEnded || res.destroyed || interrupted || cut) return
    const silentMs = ctx.clock.now() - wroteAt
    if (silentMs < keepAliveMs) return keepAliveDue(keepAliveMs - silentMs)
    // A client that is not taking what was written (its socket full) is not
    // idle to a proxy, and a comment queued behind the rest would not help.
    if (!res.writableNeedDrain) {
      const out = recutter.push(Buffer.from(SSE_KEEP_ALIVE, 'utf8'))
      if (out !== undefined) res.write(out)
    }
    wroteAt = ctx.clock.now()
    keepAliveDue(keepAliveMs)
  }
  // The stream's error event was written: the rest of the call only unwinds.
  let interrupted = false
  /** Its last event, `[DONE]`, was written. */
  let whole = false
  /** Notes, reports and logs the stream's end with `shaped`; returns its event. */
  const interrupt = (shaped: ErrorReply): string => {
    interrupted = true
    reportDeadlineReply(res.req, shaped)
    ctx.log('warn', 'stream-interrupted', { model: reply.model, error: shaped.body.error.code })
    return openAISseData(shaped.body)
  }
  res.statusCode = 200
  res.setHeader('content-type', 'text/event-stream; charset=utf-8')
  // `no-transform` (RFC 9111 §5.2.2.6): what compression middleware
  // (Express's `compression()`, ahead of the gateway in an app) and proxies
  // honour. Without it `compression()` gzipped the stream and held every
  // event in its zlib buffer until the answer's end: the client got the
  // whole answer at once, its first token as late as its last.
  res.setHeader('cache-control', 'no-cache, no-store, no-transform')
  res.setHeader('x-accel-buffering', 'no')
  res.flushHeaders()
  keepAliveDue(keepAliveMs)
  // The ingress middleware's backstop, due `replyReserveMs` after this call's
  // deadline, can only end a started stream, and a clean end is what the
  // official clients read as a whole answer (openai-node does not check for
  // `[DONE]`). It comes first after an event-loop stall (a GC pause, a
  // starved CPU): both deadlines are then due at once, and the request's
  // goes first, or this one's error event waits on the aborted call's
  // unwinding. So its end carries the deadline's error event.
  const release = beforeForeignEnd(res, () => {
    if (interrupted || cut || res.destroyed) return
    const reason = expiry(options.deadline)
    if (reason === undefined) return
    const shaped = ctx.redact(errorReply(reason))
    // Stalled on a client that stopped reading, it is that client's, as
    // `onCut`'s is: its code only.
    if (scope !== undefined && waitingOnClient) scope.errorCode ??= shaped.body.error.code
    else if (scope !== undefined) noteStreamError(scope, shaped)
    const out = recutter.push(Buffer.from(interrupt(shaped), 'utf8'))
    if (out !== undefined) res.write(out)
  })
  try {
    let endedBadly = false
    /** The provider's own finish reason of an answer that ended in an error. */
    let badReason: string | undefined
    for (let next = first; !next.done; next = await events.next()) {
      // Not encoded (no finish_reason, no usage chunk): read on to the end, as above.
      if (endsInError(next)) {
        endedBadly = true
        badReason = providerFinishReason(next)
      } else {
        if (!tokenSeen && isToken(next.value)) {
          tokenSeen = true
          if (scope !== undefined) {
            ctx.metrics.timeToFirstToken(reply.model, ctx.clock.now() - scope.startedAt)
          }
        }
        for (const chunk of encoder.encode(next.value)) await write(openAISseData(chunk))
      }
    }
    if (endedBadly) throw endedInError(reply.answeredBy?.(), true, badReason)
    await write(OPENAI_SSE_DONE)
    whole = true
  } catch (error) {
    if (!interrupted && !cut && !res.destroyed && outputFiltered(error)) {
      // The provider refused the rest of the output, as Azure OpenAI's
      // filter and Anthropic's `stop_reason: "refusal"` do: their finish,
      // `content_filter`, then `[DONE]`. Not an outage: as a
      // `stream_interrupted` `server_error` event the official clients threw
      // mid-iteration, and alerts and retry logic read the gateway failing
      // where the same request is filtered again. No usage chunk: the
      // provider reported none.
      ctx.log('info', 'stream-filtered', { model: reply.model, by: reply.answeredBy?.() })
      // With the log probabilities of the text that did go out: the finish
      // chunk is where a stream's are sent (README, "Log probabilities").
      const logprobs = isStreamInterrupted(error) ? error.partialLogprobs : undefined
      const finish = encoder.encode({
        type: 'finish',
        finishReason: 'content_filter',
        ...(logprobs === undefined ? {} : { logprobs }),
      })
      for (const chunk of finish) await write(openAISseData(chunk))
      await write(OPENAI_SSE_DONE)
      whole = true
    } else {
      const shaped = ctx.redact(errorReply(error))
      if (scope !== undefined) noteStreamError(scope, shaped)
      logIfBug(ctx, shaped.body.error.code, error)
      // The backstop's end carried the error event: the call only unwound.
      if (interrupted) return 200
      // Cut by the gateway (onCut noted why): whatever the call ended with
      // after that — the close may read as a departure to it — says nothing new.
      if (res.destroyed && !clientLeft && isDeadlineExceeded(options.deadline.reason)) onCut()
      if (cut) return 200
      if (shaped.status === 499 || res.destroyed) clientLeft = true
      else await write(interrupt(shaped))
    }
  } finally {
    if (keepAlive !== undefined) ctx.clock.clearTimeout(keepAlive)
    keepAlive = undefined
    release()
    await events.return?.()
    // end() throws for an event left over its size limit (pushed whole,
    // ours never is): the stream still ends and its listener goes.
    let rest: Uint8Array | undefined
    try {
      rest = recutter.end()
    } catch {
      rest = undefined
    }
    if (!res.writableEnded && !res.destroyed) {
      res.end(rest)
      // Ended into a socket the client is not taking bytes from (the last
      // events fit under the write buffer's mark, so no write waited): the
      // end is waited for under the deadline, as a non-streamed answer's
      // is. Not waited for, the request was logged answered at once and its
      // socket, with the end buffered in it, was held for as long as the
      // client stayed connected — past the deadline, no error logged or
      // counted. A deadline already over ended the stream with its error
      // event: that end is kept while its bytes move, cut once they stall
      // (see `flushedOrCut`) — the ingress middleware's grace is not armed
      // once that event reported the expiry.
      if (!res.writableFinished && !res.destroyed) {
        // Whole (its `[DONE]` written): what it waits for now is its turn
        // or its client, not the answer — a stream pipelined behind
        // another, delivered once its turn came, is no expiry.
        if (whole && !interrupted && !cut && scope !== undefined) scope.answered = true
        // An end that carries the stream's error event is that error's,
        // whether its client takes it or not: only a clean end is watched.
        const release = interrupted || cut ? undefined : watchTransit(res)
        try {
          await flushedOrCut(res, 'finish', options.deadline, onCut)
        } finally {
          release?.()
        }
        // Its client reset the connection with the end still queued: Node
        // says 'finish' (so 'close' finds it finished), but it never went —
        // read as `onClose` reads an unfinished close.
        if (!cut && lostInTransit(res)) {
          if (isDeadlineExceeded(options.deadline.reason)) onCut()
          else clientLeft = true
        }
      }
    }
    res.off('close', onClose)
  }
  if (clientLeft && scope !== undefined) scope.errorCode ??= 'client_closed'
  return clientLeft ? 499 : 200
}

/**
 * The stream broke after its first token because the provider's output
 * filter stopped it (llm's `content_policy`: Anthropic's `event: error`
 * "Output blocked by content filtering policy", DashScope's
 * `data_inspection_failed`): a finish, not a failure — unless a tool call
 * had begun. Its arguments may be cut or missing (the client's parser reads
 * none as `{}`), and a finish would have the client run a call the model
 * never finished writing (`send_email({})`): such a stream stays
 * interrupted, as a cut one is.
 */
function outputFiltered(error: unknown): boolean {
  return (
    isStreamInterrupted(error) &&
    isProviderError(error.cause) &&
    error.cause.kind === 'content_policy' &&
    !error.partialContent.some((block) => block.type === 'tool_call')
  )
}

/** Output the model generated (llm's first token: an empty delta never arrives as one). */
function isToken(event: StreamEvent): boolean {
  return event.type === 'text' || event.type === 'thinking' || event.type === 'tool_call'
}

/** The provider's `finish` said the answer ended in an error (see `endedInError`). */
function endsInError(next: IteratorResult<StreamEvent>): boolean {
  return !next.done && next.value.type === 'finish' && next.value.finishReason === 'error'
}

/** The provider's own word for a finish (`insufficient_system_resource`, `MALFORMED_FUNCTION_CALL`). */
function providerFinishReason(next: IteratorResult<StreamEvent>): string | undefined {
  return !next.done && next.value.type === 'finish' ? next.value.providerFinishReason : undefined
}

/**
 * The `DeadlineExceededError` of `deadline` or of the first of its parents
 * that has run out (the request's, whose expiry its children only follow).
 */
function expiry(deadline: Deadline | undefined): unknown {
  for (let d = deadline; d !== undefined; d = d.parent) {
    if (isDeadlineExceeded(d.reason)) return d.reason
  }
  return undefined
}

/** The error a started stream ended with, its code and status, unless an earlier one was noted. */
function noteStreamError(scope: RequestScope, shaped: ErrorReply): void {
  if (scope.errorCode !== undefined) return
  scope.errorCode = shaped.body.error.code
  scope.streamErrorStatus = shaped.status
}
