import { randomBytes } from 'node:crypto'
import type { ServerResponse } from 'node:http'
import type { Clock } from '@hourglass/core'
import { anthropicContentRefused } from './anthropicContentRefused.js'
import { anthropicSamplingRefused } from './anthropicSamplingRefused.js'
import { anthropicThinkingRefused } from './anthropicThinkingRefused.js'
import { anthropicUserIdRefused } from './anthropicUserIdRefused.js'
import { checkReplyFields } from './checkReplyFields.js'
import { deepseekReasoningMissing } from './deepseekReasoningMissing.js'
import { deepseekErrors } from './errors/deepseekErrors.js'
import {
  GEMINI_ANSWER,
  type GeminiAnswerMark,
  geminiAnswerBody,
} from './errors/geminiAnswerBody.js'
import { RESET_AFTER_S, stampResets } from './errors/resetAfterS.js'
import { geminiFunctionNameRefused } from './geminiFunctionNameRefused.js'
import { geminiJsonWithToolsRefused } from './geminiJsonWithToolsRefused.js'
import { historyShapeRefused } from './historyShapeRefused.js'
import { openAIRequiredFieldMissing } from './openAIRequiredFields.js'
import { pause, writePaced } from './pacing.js'
import { planAnswer } from './planAnswer.js'
import { qwenThinkingNotStreamed } from './qwenThinkingNotStreamed.js'
import {
  anthropicMaxTokensMissing,
  anthropicVersionProblem,
  maxTokensUnsupported,
  streamOptionsWithoutStream,
  unreadableBody,
} from './refusedBody.js'
import { geminiPairingRefused, toolPairingRefused } from './toolPairingRefused.js'
import { toolSettingsWithoutTools } from './toolSettingsWithoutTools.js'
import type {
  ErrorReply,
  HangReply,
  ProviderDialect,
  ProviderReply,
  RecordedRequest,
  TextReply,
} from './types.js'
import { anthropicMessages } from './wire/anthropicMessages.js'
import { geminiGenerate } from './wire/geminiGenerate.js'
import { geminiJsonArray } from './wire/geminiJsonArray.js'
import { stringifyWithRaw } from './wire/RawJson.js'
import type { Frame, WireFormat } from './wire/WireFormat.js'
import { wireFrameCount, withStopTokens } from './withStopTokens.js'

export interface ReplyContext {
  res: ServerResponse
  record: RecordedRequest
  wire: WireFormat | undefined
  dialect: ProviderDialect
  clock: Clock
  /** Cut answers at the request's token cap and stop sequences (the fake's `honourOutputLimits`). */
  honourOutputLimits: boolean
  /** Wall time (epoch ms) on the fake's clock: its start's wall time plus the clock's progress. */
  wallNowMs: () => number
  /** Aborted when the client goes away or the fake closes. */
  signal: AbortSignal
}

/**
 * What keeps a quiet stream alive: Anthropic's own `ping` event ("Event
 * streams may also include any number of ping events", docs.claude.com
 * streaming), which a client must read and skip as it does the one after
 * `message_start`; elsewhere an SSE comment (DeepSeek's documented `:
 * keep-alive`, and what proxies send).
 */
function keepAlive(ctx: ReplyContext): string {
  return ctx.record.route === 'anthropic-messages'
    ? 'event: ping\ndata: {"type": "ping"}\n\n'
    : ': keep-alive\n\n'
}

const REPLY_KINDS: ReadonlySet<unknown> = new Set(['text', 'error', 'hang'])

/** Sends one scripted reply, keeping `record.outcome`, `tokensSent` and `paid` up to date. */
export async function writeReply(ctx: ReplyContext, reply: ProviderReply): Promise<void> {
  // A script function may return nothing at all: answered as below, not a TypeError that resets the connection.
  if (typeof reply !== 'object' || reply === null) return writeBadScript(ctx, reply)
  // A script function's reply was not checked where it was written: thrown
  // here, before anything is sent, it is the 500 `reply_failed` naming it.
  if (REPLY_KINDS.has(reply.kind)) checkReplyFields('reply', reply)
  switch (reply.kind) {
    case 'error':
      return writeError(ctx, reply)
    case 'hang':
      return writeHang(ctx, reply)
    case 'text':
      return writeText(ctx, reply)
    default:
      // A typo in `kind`: nothing above answers it, and the client would wait for good.
      return writeBadScript(ctx, reply)
  }
}

/** A generated answer, unless the request is one the API would refuse first. */
function writeText(ctx: ReplyContext, reply: TextReply): Promise<void> {
  // The API refuses it before generating: the scripted answer is not given.
  // (No route is one of those refusals; `wire` is checked again for the type.)
  const refused = refusedBeforeGenerating(ctx)
  if (refused !== undefined || ctx.wire === undefined)
    return writeError(ctx, refused ?? noRoute(ctx))
  // Gemini's JSON-array form is streamed too: its elements are written as they are generated.
  return ctx.record.stream || ctx.wire === geminiJsonArray
    ? writeStream(ctx, ctx.wire, reply)
    : writeJson(ctx, ctx.wire, reply)
}

/**
 * What the API answers instead of generating — no such route, a body it
 * cannot read, a field it refuses —, or undefined when it would generate.
 * Every answer is held to it: a text reply, and a Gemini answer with nothing
 * to use in it (`GEMINI_ANSWER`), which a blocked prompt or a malformed call
 * is only after these checks passed. That one skipped them: a request
 * declaring a tool Gemini refuses (`1password_read`) got the malformed
 * call's 200 where a text reply got the 400, and a body that was no JSON
 * got a billed answer.
 */
function refusedBeforeGenerating(ctx: ReplyContext): ErrorReply | undefined {
  if (ctx.wire === undefined) return noRoute(ctx)
  const { dialect, record } = ctx
  const { route, body, headers } = record
  return (
    anthropicVersionProblem(dialect, route, headers) ??
    unreadableBody(dialect, route, record.rawBody) ??
    openAIRequiredFieldMissing(dialect, route, body) ??
    historyShapeRefused(dialect, route, body) ??
    anthropicMaxTokensMissing(dialect, route, body) ??
    streamOptionsWithoutStream(dialect, route, body) ??
    maxTokensUnsupported(dialect, route, body) ??
    toolSettingsWithoutTools(route, body) ??
    anthropicSamplingRefused(dialect, route, body, headers) ??
    anthropicThinkingRefused(dialect, route, body, headers) ??
    anthropicUserIdRefused(dialect, route, body) ??
    anthropicContentRefused(dialect, route, body, headers) ??
    geminiFunctionNameRefused(route, body) ??
    geminiJsonWithToolsRefused(route, record.model, body) ??
    deepseekReasoningMissing(dialect, route, body) ??
    toolPairingRefused(dialect, route, body) ??
    geminiPairingRefused(route, body) ??
    qwenThinkingNotStreamed(dialect, route, body, record.stream) ??
    unavailableFormat(dialect, body)
  )
}

function noRoute(ctx: ReplyContext): ErrorReply {
  return {
    kind: 'error',
    status: 404,
    body: {
      error: {
        message: `the fake provider has no route ${ctx.record.method} ${ctx.record.path}`,
        type: 'invalid_request_error',
        code: 'not_found',
      },
    },
  }
}

function writeBadScript(ctx: ReplyContext, reply: unknown): Promise<void> {
  return writeError(ctx, {
    kind: 'error',
    status: 500,
    body: {
      error: {
        message: `the fake provider's reply script gave ${describeReply(reply)}, not a reply (use reply.text, reply.error or reply.hang)`,
        type: 'fake_provider_script_error',
        code: 'invalid_reply_script',
      },
    },
  })
}

function describeReply(reply: unknown): string {
  if (typeof reply !== 'object' || reply === null) return String(reply)
  const kind = (reply as { kind?: unknown }).kind
  return `an object of kind ${typeof kind === 'string' ? `'${kind.slice(0, 40)}'` : String(kind)}`
}

async function writeError(ctx: ReplyContext, reply: ErrorReply): Promise<void> {
  const answer = (reply as { [GEMINI_ANSWER]?: GeminiAnswerMark })[GEMINI_ANSWER]
  // An answer, not an error: refused first as a text reply is, its latency not waited.
  const refused = answer === undefined ? undefined : refusedBeforeGenerating(ctx)
  if (refused !== undefined) return writeError(ctx, refused)
  if (!(await pause(ctx.clock, reply.latencyMs ?? 0, ctx.signal))) return
  if (answer !== undefined) return writeGeminiAnswer(ctx, reply, answer)
  const text = typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body)
  const resetAfterS = (reply as { [RESET_AFTER_S]?: number })[RESET_AFTER_S]
  ctx.res.writeHead(reply.status, {
    'content-type':
      typeof reply.body === 'string' ? 'text/plain; charset=utf-8' : 'application/json',
    'content-length': Buffer.byteLength(text),
    // An API names its refusals as it names its answers (OpenAI's 429 has
    // its `x-request-id`, Anthropic's 529 its `request-id`, DeepSeek's 402
    // its `x-ds-trace-id`; Gemini none), each by an id of its own: added
    // here, per answer, so a reply object answered twice (or `reply.error`'s)
    // gets one too. A scripted header still wins.
    ...requestIdHeader(ctx, randomBytes(12).toString('hex')),
    ...(resetAfterS === undefined || reply.headers === undefined
      ? reply.headers
      : stampResets(reply.headers, ctx.wallNowMs(), resetAfterS)),
  })
  ctx.record.outcome = 'error'
  ctx.res.end(text)
}

/**
 * A Gemini answer with nothing to use in it (`geminiErrors.promptBlocked()`,
 * `.malformedFunctionCall()`), in the form the request asked for, as Gemini
 * sends every answer: a stream's one `alt=sse` event (`text/event-stream`),
 * the JSON array's one element, or the JSON. Scripted by hand as
 * `reply.error(200, body)`, they went out as a JSON body whatever was
 * asked — to a stream request too —, so a stream parser that drops an
 * event without candidates (the blocked prompt read as an empty answer)
 * was never run against them. Another route gets the JSON.
 */
function writeGeminiAnswer(ctx: ReplyContext, reply: ErrorReply, mark: GeminiAnswerMark): void {
  const json = JSON.stringify(geminiAnswerBody(reply.body, ctx.record, ctx.dialect))
  const gemini = ctx.record.route === 'gemini'
  const sse = gemini && ctx.record.stream
  const array = gemini && ctx.wire === geminiJsonArray
  const text = sse ? `data: ${json}\r\n\r\n` : array ? `[${json}]` : json
  ctx.res.writeHead(reply.status, {
    'content-type': sse
      ? geminiGenerate.streamContentType
      : array
        ? geminiJsonArray.streamContentType
        : 'application/json',
    ...(sse || array ? { 'cache-control': 'no-cache' } : {}),
    'content-length': Buffer.byteLength(text),
    ...requestIdHeader(ctx, randomBytes(12).toString('hex')),
    ...reply.headers,
  })
  ctx.record.outcome = 'error'
  // A malformed call was written (and billed) before Gemini gave up on it.
  if (mark.generated) ctx.record.paid = true
  ctx.res.end(text)
}

async function writeHang(ctx: ReplyContext, reply: HangReply): Promise<void> {
  ctx.record.outcome = 'hang'
  if (reply.afterHeaders === true) {
    // Anthropic opens every stream with `message_start` (the message's id,
    // model and input token counts) before any block or ping: a stream
    // stalled before its first token has sent it. The fake sent pings alone,
    // so a client that read the input counts (or the id) from
    // `message_start` never met them in a stalled stream.
    const start =
      ctx.wire === anthropicMessages && ctx.record.stream ? anthropicStart(ctx) : undefined
    ctx.res.writeHead(200, {
      // A stream's headers for a stream; a whole answer's for the rest.
      'content-type': ctx.record.stream ? 'text/event-stream; charset=utf-8' : 'application/json',
      'cache-control': 'no-cache',
      // DeepSeek names the request in the headers it sends at once, before
      // its keep-alives (a queued request's `: keep-alive` stream carried
      // `x-ds-trace-id` too).
      ...(start !== undefined || ctx.dialect === 'deepseek'
        ? requestIdHeader(ctx, start?.id ?? '')
        : {}),
    })
    ctx.res.flushHeaders()
    if (start !== undefined && !(await writePaced(ctx.res, start.text, {}, ctx.clock, ctx.signal)))
      return
    // Keep-alives (comments, Anthropic's pings) are a stream's, as
    // message_start is: a request that does not stream — Gemini's JSON-array
    // form among them — gets none, as a text reply's does; but DeepSeek's
    // empty lines, which keep its whole answers alive (writeDeepSeekKeptAliveJson).
    const deepSeekJson =
      !ctx.record.stream && ctx.dialect === 'deepseek' && ctx.record.route === 'openai-chat'
    const every = ctx.record.stream || deepSeekJson ? (reply.keepAliveEveryMs ?? 0) : 0
    const beat = deepSeekJson ? '\n' : keepAlive(ctx)
    while (every > 0 && (await pause(ctx.clock, every, ctx.signal))) {
      if (!(await writePaced(ctx.res, beat, {}, ctx.clock, ctx.signal))) return
    }
  }
  await new Promise<void>((resolve) => {
    if (ctx.signal.aborted) resolve()
    else ctx.signal.addEventListener('abort', () => resolve(), { once: true })
  })
}

/** The `message_start` event an empty answer to this request would open with, and its message id. */
function anthropicStart(ctx: ReplyContext): { id: string; text: string } {
  const plan = planAnswer({ kind: 'text', text: '' }, ctx.record, anthropicMessages, ctx.dialect)
  return { id: plan.id, text: anthropicMessages.frames(plan)[0]?.text ?? '' }
}

async function writeJson(ctx: ReplyContext, wire: WireFormat, reply: TextReply): Promise<void> {
  const plan = planAnswer(reply, ctx.record, wire, ctx.dialect, ctx.honourOutputLimits)
  const tokens = withStopTokens(wire.frames(plan), plan).filter((f) => f.token === true).length
  // A non-streamed answer arrives only after the whole generation.
  const generationMs =
    (reply.firstTokenDelayMs ?? 0) + (reply.tokenDelayMs ?? 0) * Math.max(0, tokens - 1)
  const answer = wire.json(plan)
  // Only tool calls carry raw JSON: a replacer on every answer would cost
  // the fake (the floor of the gateway's benchmark) for nothing.
  const body = plan.toolCalls.length > 0 ? stringifyWithRaw(answer) : JSON.stringify(answer)
  if (
    ctx.dialect === 'deepseek' &&
    ctx.record.route === 'openai-chat' &&
    (reply.keepAliveEveryMs ?? 0) > 0 &&
    reply.cutAfterTokens === undefined
  ) {
    return writeDeepSeekKeptAliveJson(ctx, reply, plan.id, body, tokens, generationMs)
  }
  if (!(await pause(ctx.clock, (reply.latencyMs ?? 0) + generationMs, ctx.signal))) return
  ctx.res.writeHead(200, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    ...requestIdHeader(ctx, plan.id),
    ...reply.headers,
  })
  if (reply.cutAfterTokens !== undefined) {
    // Generated (and billed), then lost in transit: half the body, then a dead socket.
    const half = Buffer.from(body).subarray(0, Math.floor(Buffer.byteLength(body) / 2))
    await writePaced(ctx.res, half, {}, ctx.clock, ctx.signal)
    ctx.record.tokensSent = Math.min(reply.cutAfterTokens, tokens)
    ctx.record.paid = true
    ctx.record.outcome = 'cut'
    ctx.res.destroy()
    return
  }
  if (!(await writePaced(ctx.res, body, reply, ctx.clock, ctx.signal))) return
  ctx.record.tokensSent = tokens
  ctx.record.paid = true
  ctx.record.outcome = 'success'
  ctx.res.end()
}

/**
 * DeepSeek keeps a slow non-streamed request alive with empty lines: "Non-
 * streaming requests: Continuously return empty lines … These contents do
 * not affect the parsing of the JSON body by the OpenAI SDK"
 * (api-docs.deepseek.com/quick_start/rate_limit). So the status line and
 * headers come at once (no content-length), then a `\n` every
 * `keepAliveEveryMs` while the answer is generated, then the JSON.
 */
async function writeDeepSeekKeptAliveJson(
  ctx: ReplyContext,
  reply: TextReply,
  id: string,
  body: string,
  tokens: number,
  generationMs: number,
): Promise<void> {
  if (!(await pause(ctx.clock, reply.latencyMs ?? 0, ctx.signal))) return
  ctx.res.writeHead(200, {
    'content-type': 'application/json',
    ...requestIdHeader(ctx, id),
    ...reply.headers,
  })
  ctx.res.flushHeaders()
  const every = reply.keepAliveEveryMs ?? 0
  let left = generationMs
  while (left > every) {
    if (!(await pause(ctx.clock, every, ctx.signal))) return
    if (!(await writePaced(ctx.res, '\n', {}, ctx.clock, ctx.signal))) return
    left -= every
  }
  if (!(await pause(ctx.clock, left, ctx.signal))) return
  if (!(await writePaced(ctx.res, body, reply, ctx.clock, ctx.signal))) return
  ctx.record.tokensSent = tokens
  ctx.record.paid = true
  ctx.record.outcome = 'success'
  ctx.res.end()
}

async function writeStream(ctx: ReplyContext, wire: WireFormat, reply: TextReply): Promise<void> {
  const plan = planAnswer(reply, ctx.record, wire, ctx.dialect, ctx.honourOutputLimits)
  let frames = withStopTokens(wire.frames(plan), plan)
  if (reply.streamError !== undefined) {
    const kept = upToTokens(frames, reply.streamError.afterTokens)
    frames = [...kept, { text: wire.errorFrame(reply.streamError, plan, wireFrameCount(kept)) }]
  }
  if (!(await pause(ctx.clock, reply.latencyMs ?? 0, ctx.signal))) return
  const { res, record } = ctx
  // An SSE comment in Gemini's JSON array would make it unreadable.
  const sse = wire.streamContentType.startsWith('text/event-stream')
  res.writeHead(200, {
    'content-type': wire.streamContentType,
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    ...requestIdHeader(ctx, plan.id),
    ...reply.headers,
  })
  res.flushHeaders()
  for (const frame of frames) {
    if (frame.token === true) {
      if (reply.cutAfterTokens !== undefined && record.tokensSent >= reply.cutAfterTokens) {
        record.outcome = 'cut'
        res.destroy()
        return
      }
      const waited =
        record.tokensSent === 0
          ? await firstTokenWait(ctx, reply, sse)
          : await pause(ctx.clock, reply.tokenDelayMs ?? 0, ctx.signal)
      if (!waited) return
    }
    if (!(await writePaced(res, frame.text, reply, ctx.clock, ctx.signal))) return
    if (frame.token === true) {
      record.tokensSent++
      record.paid = true
    }
  }
  record.outcome = reply.streamError === undefined ? 'success' : 'stream-error'
  if (record.outcome === 'success') record.paid = true
  res.end()
}

/** Waits out `firstTokenDelayMs`, sending `: keep-alive` comments meanwhile when asked to (SSE only). */
async function firstTokenWait(ctx: ReplyContext, reply: TextReply, sse: boolean): Promise<boolean> {
  let left = reply.firstTokenDelayMs ?? 0
  const every = sse ? (reply.keepAliveEveryMs ?? 0) : 0
  while (every > 0 && left > every) {
    if (!(await pause(ctx.clock, every, ctx.signal))) return false
    if (!(await writePaced(ctx.res, keepAlive(ctx), {}, ctx.clock, ctx.signal))) return false
    left -= every
  }
  return pause(ctx.clock, left, ctx.signal)
}

/**
 * The frames before the error: up to `count` tokens, and never the frame
 * that finishes the answer — an `afterTokens` at or past the answer's length
 * puts the error in its place, not after a complete answer (`[DONE]`,
 * `message_stop`), which a "mid-stream error → retry" test would pass
 * without ever seeing a broken stream. A finishing frame that carries the
 * last token too (Gemini's last text) goes out as it would mid-answer.
 */
function upToTokens(frames: Frame[], count: number): Frame[] {
  const kept: Frame[] = []
  let tokens = 0
  for (const frame of frames) {
    if (frame.finish === true) {
      const { unfinished } = frame
      if (unfinished !== undefined && frame.token === true && tokens < count) {
        // A replacer function: the chunk's text may hold `$&`, which a string replacement reads.
        const text = frame.text.replace(unfinished.finished, () => unfinished.sent)
        kept.push({ text, token: true })
      }
      break
    }
    if (frame.token === true) {
      if (tokens === count) break
      tokens++
    }
    kept.push(frame)
  }
  return kept
}

/**
 * The header each API names its request by, as it sends it: OpenAI's
 * `x-request-id`, Anthropic's `request-id`; DeepSeek's `x-ds-trace-id` (32
 * hex digits), on either of its APIs and on every answer, and no
 * `x-request-id` at all (raw api.deepseek.com answers, JSON and streamed,
 * 2025–2026: `x-ds-trace-id: 4f241ebb167c3c01b3a97ed15dccc06a` beside
 * `server`, `vary`, `strict-transport-security`, CloudFront's); Gemini none
 * (its answers name themselves in the body's `responseId`). The fake sent
 * `x-request-id` from DeepSeek and Gemini too, so a client that read a
 * request id there found one against the fake only.
 */
function requestIdHeader(ctx: ReplyContext, id: string): Record<string, string> {
  if (ctx.dialect === 'deepseek') return { 'x-ds-trace-id': randomBytes(16).toString('hex') }
  // A path no API has is answered by the API the fake plays, named as it
  // names its answers: Anthropic's 404 sent OpenAI's `x-request-id`.
  const unknown = ctx.record.route === 'unknown'
  if (ctx.record.route === 'gemini' || (unknown && ctx.dialect === 'gemini')) return {}
  return ctx.record.route === 'anthropic-messages' || (unknown && ctx.dialect === 'anthropic')
    ? { 'request-id': `req_${id}` }
    : { 'x-request-id': `req_${id}` }
}

/** DeepSeek's 400 for a `response_format` it does not take (`json_schema`); undefined otherwise. */
function unavailableFormat(dialect: ProviderDialect, body: unknown): ErrorReply | undefined {
  if (dialect !== 'deepseek' || typeof body !== 'object' || body === null) return undefined
  const format = (body as { response_format?: { type?: unknown } | null }).response_format
  return format?.type === 'json_schema' ? deepseekErrors.responseFormatUnavailable() : undefined
}
