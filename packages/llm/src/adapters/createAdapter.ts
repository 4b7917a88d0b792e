import { pipeline, type Transform } from 'node:stream'
import * as zlib from 'node:zlib'
import {
  DEADLINE_EXPIRED_HEADER,
  expiryError,
  saysDeadlineExpired,
  streamableReason,
  systemClock,
} from '@hourglass/core'
import { createFetch, type DeadlineDispatchOptions, type HourglassFetch } from '@hourglass/fetch'
import { request as undiciRequest } from 'undici'
import { StreamCollector } from '../call/StreamCollector.js'
import { unwritableToolCall } from '../dialects/blocks.js'
import { cutRedacted } from '../dialects/classifyError.js'
import { type Dialect, readRequestId } from '../dialects/Dialect.js'
import { headerValue } from '../dialects/errorHeaders.js'
import { isNoAnswer } from '../dialects/noAnswer.js'
import { MAX_JSON_BODY_CHARS, parseAnswerJson, parseJson } from '../dialects/safeJson.js'
import { ProviderError } from '../errors/ProviderError.js'
import {
  isMalformedReply,
  isProviderReplyError,
  malformedReply,
  type ProviderReplyError,
} from '../errors/ProviderReplyError.js'
import { MAX_CODE_CHARS } from '../errors/printableError.js'
import { ResponseTooLargeError } from '../errors/ResponseTooLargeError.js'
import type { ChatRequest, ChatResponse, Logprobs, StreamEvent, Usage } from '../types.js'
import {
  checkAdapterOptions,
  checkOptionsObject,
  refuseUnknownAdapterOptions,
} from './checkAdapterOptions.js'
import { classifyThrown } from './classifyTransport.js'
import { redactError, redactingDialect, secretValues } from './keyRedaction.js'
import { LazyDecoder } from './LazyDecoder.js'
import {
  type AdapterOptions,
  type ModelAdapter,
  NEVER_ABORTED,
  type OpenResult,
  type PreparedRequest,
  type SendOptions,
  type SendResult,
  takesNeverAborted,
} from './ModelAdapter.js'
import { declaredLength, discardBody, readBody } from './readBody.js'
import { type EventBody, readEvents, type WholeBody } from './readEvents.js'
import { unwritableRequest } from './unwritableRequest.js'

type RequestOptions = NonNullable<Parameters<typeof undiciRequest>[1]> & DeadlineDispatchOptions

/** What `prepare` built: the URL, the body text and the dialect's headers (no key yet). */
interface Built extends PreparedRequest {
  url: string
  body: string
  headers: Record<string, string> | undefined
  stream: boolean
}

/** A request ready to leave: where, and the undici options. */
interface Outgoing {
  url: string
  options: RequestOptions
}

type Reply = Awaited<ReturnType<typeof undiciRequest>>
type Failure = { ok: false; error: ProviderError }

/**
 * The default `maxResponseBytes`: 32 MiB. Generous for an LLM answer — 128k
 * output tokens are about 0.5–2 MB of JSON — so that no real answer is
 * refused (a refused answer was still generated and billed), while a broken
 * or hostile upstream costs at most this much memory per attempt.
 */
export const DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024

/**
 * The default `maxStreamBytes`: 128 MiB. A streamed token costs 120–280
 * bytes of SSE and JSON, so 128k output tokens are up to ~35 MB: four times
 * that, so that no real stream is cut (it would still be billed), while one
 * that never ends is.
 */
export const DEFAULT_MAX_STREAM_BYTES = 128 * 1024 * 1024

/**
 * An error body is read up to this (or `maxResponseBytes`, if smaller), then
 * cut: only its first 1 MiB of characters is ever parsed (the error-body
 * guard, `MAX_JSON_BODY_CHARS`), and UTF-8 takes at most 3 bytes per
 * character, so nothing past 4 MiB could change how it is classified.
 */
const MAX_ERROR_BODY_BYTES = 4 * MAX_JSON_BODY_CHARS

/** Dialect-specific touches applied to the built body before it is sent. */
export type BodyHook = (
  body: Record<string, unknown>,
  request: ChatRequest,
) => Record<string, unknown>

/**
 * An adapter for `dialect` over @hourglass/fetch. Every failure is classified
 * by the dialect's own normaliser — an HTTP error, an error object in a 200
 * body (Qwen, ERNIE), an SSE error frame after the 200 — so none of them can
 * come back as an empty success.
 */
export function createAdapter(
  dialect: Dialect,
  options: AdapterOptions,
  hook?: BodyHook,
): ModelAdapter {
  checkOptionsObject(
    typeof dialect?.name === 'string' ? `${dialect.name} adapter` : 'createAdapter',
    options,
  )
  refuseUnknownAdapterOptions('createAdapter()', options)
  const name = options.name ?? dialect.name
  checkAdapterOptions(name, options, dialect.wire)
  const model = options.model
  const apiKeys = options.apiKeys ?? (options.apiKey === undefined ? [] : [options.apiKey])
  const baseURL = options.baseURL.replace(/\/+$/, '')
  // Lower-cased once, so the adapter's own headers (the key, content-type…),
  // which are lower-case, replace a configured `Authorization` instead of
  // going out beside it.
  const extraHeaders = lowerCaseNames(options.headers)
  const maxResponseBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES
  const maxStreamBytes = options.maxStreamBytes ?? DEFAULT_MAX_STREAM_BYTES
  const errorBodyBytes = Math.min(maxResponseBytes, MAX_ERROR_BODY_BYTES)
  // Every key of the adapter (and credential header), redacted by value from
  // what a provider answers: see keyRedaction.ts.
  const secrets = secretValues(apiKeys, extraHeaders)
  const known = new Set(apiKeys)
  const redacting = redactingDialect(dialect, secrets)
  /** The secrets, with a key admission chose that is not among the adapter's (it should be). */
  const secretsFor = (send: SendOptions): readonly string[] =>
    send.apiKey === undefined || known.has(send.apiKey)
      ? secrets
      : secretValues([...apiKeys, send.apiKey], extraHeaders)
  const dialectFor = (send: SendOptions) =>
    send.apiKey === undefined || known.has(send.apiKey)
      ? redacting
      : redactingDialect(dialect, secretsFor(send))
  if (options.fetch !== undefined && typeof options.fetch?.dispatcher?.dispatch !== 'function') {
    // A plain fetch function (the global one, a mock) would be ignored here:
    // requests go through the dispatcher, and without ours no deadline or
    // phase limit would apply. Say so now rather than send unprotected.
    throw new TypeError(
      `${name} adapter: \`fetch\` must be a createFetch() from @hourglass/fetch (requests are sent through its \`dispatcher\`); got ${describe(options.fetch)} without one. To change what adapters send, compose an interceptor on that dispatcher.`,
    )
  }
  const own =
    options.fetch === undefined
      ? createFetch({ headersTimeoutMs: 600_000, bodyTimeoutMs: 120_000 })
      : undefined
  const fetch: HourglassFetch = options.fetch ?? (own as HourglassFetch)
  let turn = 0

  /**
   * The provider's request id header of `res`, when it sent one
   * (`Dialect.requestIdHeader`), with the adapter's keys redacted as from the
   * provider code: a header is the provider's to fill, and one that echoed
   * a key put it in every record and log line the id reaches.
   */
  const requestIdOf = (res: Reply, send: SendOptions): string | undefined => {
    const id = readRequestId(res.headers, dialect.requestIdHeader)
    return id === undefined ? undefined : cutRedacted(id, MAX_CODE_CHARS, secretsFor(send))
  }

  // With the request id of the answer the failure came in: what the
  // provider's support asks for, for a failed call as for an answered one.
  const fail = (
    res: Reply,
    send: SendOptions,
    error: ProviderError['normalized'],
    cause?: unknown,
  ) => ({
    ok: false as const,
    error: new ProviderError({
      provider: name,
      model,
      error: redactError(error, secretsFor(send)),
      cause,
      requestId: requestIdOf(res, send),
    }),
  })

  // Sent with undici.request through the fetch's dispatcher: its agent,
  // connector and deadline interceptor (and so its limits, the deadline
  // header, the egress events) apply exactly as through the fetch function,
  // without what the WHATWG fetch API adds per call that an adapter does not
  // use — its Request, Response, Headers, web streams and signal following:
  // about a third of a gateway's CPU per completion (BENCHMARKS.md, §9).
  // What does not depend on the key, built once per model and call
  // (`callModel` prepares before admission, so a request that cannot be
  // built takes no RPM/TPM share) and reused by its retries.
  const built = new WeakSet<PreparedRequest>()
  const build = (request: ChatRequest, stream: boolean): Built => {
    let made: ReturnType<Dialect['buildRequest']>
    let text: string
    try {
      // Object.assign, not `{ ...request, stream }`: on Node 20 a field after a
      // spread costs ~0.4 µs (V8 leaves its fast path); so do the headers.
      made = dialect.buildRequest(Object.assign({}, request, { stream }), model)
      text = JSON.stringify(hook ? hook(made.body, request) : made.body)
    } catch (thrown) {
      // A value of the caller's JSON cannot hold (a BigInt, a cycle, nesting
      // past the stack) threw a raw TypeError or RangeError from wherever it
      // was written: refused here, in one place, naming it
      // (`unwritableRequest`). A custom dialect's or body hook's own such
      // value, or its own endless recursion, is its bug: thrown as it was.
      throw unwritableRequest(request, thrown, dialect.wire === 'openai') ?? thrown
    }
    const out: Built = {
      url: `${baseURL}${made.path}`,
      body: text,
      headers: made.headers,
      stream,
    }
    built.add(out)
    return out
  }
  const ours = (prepared: PreparedRequest | undefined, stream: boolean): Built | undefined =>
    prepared !== undefined && built.has(prepared) && (prepared as Built).stream === stream
      ? (prepared as Built)
      : undefined

  const prepare = (request: ChatRequest, send: SendOptions, stream: boolean): Outgoing => {
    const made = ours(send.prepared, stream) ?? build(request, stream)
    const headers: Record<string, string> = Object.assign(
      {},
      extraHeaders,
      made.headers,
      send.apiKey === undefined ? undefined : dialect.authHeaders(send.apiKey),
    )
    headers['content-type'] = 'application/json'
    headers['accept'] = stream ? 'text/event-stream' : 'application/json'
    headers['idempotency-key'] = send.idempotencyKey
    // undici.request does not decompress (fetch did, and asked for gzip and
    // br): say so, since a request without Accept-Encoding lets a server
    // pick any coding (RFC 9110 §12.5.3).
    headers['accept-encoding'] = 'identity'
    const sent: RequestOptions = {
      method: 'POST',
      headers,
      body: made.body,
      // None when nothing can abort the attempt (its deadline reaches undici
      // through the interceptor): undici would listen to it for nothing.
      signal: send.signal === NEVER_ABORTED ? undefined : send.signal,
      dispatcher: fetch.dispatcher,
      // No transport retry at all, not even fetch's fast-connect one: every
      // request that leaves here is one attempt of the model policy, so it
      // shows in `onAttempt`, counts against the provider's retry budget and
      // is decided by the same rules (a connect refused in < 50 ms comes
      // back as a retryable `network` failure). A retry here would be
      // invisible to all three, and could re-bill a generation.
      retry: false,
    }
    if (send.deadline !== undefined) sent.deadline = send.deadline
    return { url: made.url, options: sent }
  }

  /** What `classifyThrown` and `readEvents` build a failure with; `requestId`, once an answer came. */
  const context = (send: SendOptions, requestId?: string | undefined) => ({
    provider: name,
    model,
    signal: send.signal,
    deadline: send.deadline,
    keys: secretsFor(send),
    requestId,
  })

  // The request is built before the `try`: what building it throws (an
  // `InvalidChatRequestError`, or whatever else the dialect's builder, the
  // body hook or JSON.stringify throws) rejects as it is — nothing was sent,
  // so it is no `network` failure to retry, to charge to the retry budget or
  // to hand to a fallback. What is thrown once the request is on its way is
  // classified.
  const attempt = async <T>(
    request: ChatRequest,
    send: SendOptions,
    stream: boolean,
    work: (res: Reply) => Promise<T | Failure>,
  ): Promise<T | Failure> => {
    const out = prepare(request, send, stream)
    // fetch refuses such a request without a byte sent, with the same error
    // a deadline or abort in flight gives: known here, not after. (A fetch
    // stand-in without the check, a test's, counts every request as sent.)
    if (fetch.wouldRefuse?.({ deadline: send.deadline, signal: send.signal }) === true) {
      send.sent = false
    }
    const clock = send.deadline?.clock ?? systemClock
    const sentAt = clock.now()
    let headersAt: number | undefined
    let res: Reply | undefined
    const unlink = streamSafeSignal(out.options)
    try {
      res = await undiciRequest(out.url, out.options)
      headersAt = clock.now()
      // An Hourglass hop behind this URL (@hourglass/gateway, an Express app
      // with deadline()) spent the budget this attempt sent it: its 504 with
      // `x-deadline-expired: 1` is this call's deadline running out, told
      // early (the hop answers within its reserve of the end), as the gRPC
      // client reads the same trailer. Read as a provider's server_error it
      // was a ModelUnavailableError (an Express app's 500, not deadlineErrors()'
      // 504 naming the slice), or a fallback sent with the last few ms.
      if (
        res.statusCode === 504 &&
        send.deadline !== undefined &&
        !send.deadline.observe &&
        saysDeadlineExpired(headerValue(res.headers, DEADLINE_EXPIRED_HEADER))
      ) {
        discardBody(res.body)
        // It answered: the attempt's record (and its chat span) says 504, as
        // its egress span does. Not `answerStarted`: nothing was billed.
        send.answerStatus = res.statusCode
        throw expiryError(send.deadline)
      }
      // Asked for identity, a provider or proxy may code the answer anyway:
      // decoded here, so the limits count decoded bytes (a bomb stops at
      // them) and the answer is read, not taken for a proxy's page and
      // generated again. A 2xx only: an error's status and headers say what
      // it is, and its body, decoded, failed the read when it was not coded
      // as labelled (a 429 became `network`, its Retry-After lost).
      if (res.statusCode >= 200 && res.statusCode < 300) res = decodedReply(res)
      res.body.once('close', unlink)
      return await work(res)
    } catch (thrown) {
      unlink()
      // How long the request waited for its headers: a close before any
      // headers long after sending is a cut generation, not a stale
      // connection (classifyThrown). Once headers came (an error status
      // whose body then broke off, rethrown by `brokeOff`), no such wait:
      // a 503 cut mid-body was taken for a billed generation, not retried.
      const waitedMs = headersAt === undefined ? clock.now() - sentAt : undefined
      // An error status whose body broke off keeps its answer's request id.
      const requestId = res === undefined ? undefined : requestIdOf(res, send)
      const verdict = classifyThrown(thrown, { ...context(send, requestId), waitedMs })
      if ('rethrow' in verdict) throw verdict.rethrow
      return { ok: false as const, error: verdict.error }
    }
  }

  // A 2xx body that breaks off while it is read (a cut connection, the body
  // timeout) is not resent to this model: a whole answer is sent after the
  // whole generation, so the provider generated — and billed — it (a
  // fallback may still be asked). An error status's body: as any failure.
  const brokeOff = (thrown: unknown, res: Reply, send: SendOptions): Failure => {
    if (res.statusCode < 200 || res.statusCode >= 300) throw thrown
    const verdict = classifyThrown(thrown, context(send, requestIdOf(res, send)), res.statusCode)
    if ('rethrow' in verdict) throw verdict.rethrow
    return { ok: false, error: verdict.error }
  }

  // A 2xx answer past `maxResponseBytes` is the same case as one that broke
  // off: generated and billed, so never resent to this model — asking again
  // would pay for the same oversized answer, three times by default. Not a
  // request-bound kind either (the request did not ask for a body that
  // size; an upstream sending one is broken or hostile): a fallback model,
  // another provider, may answer — at most one more generation per model.
  const tooLarge = (
    res: Reply,
    send: SendOptions,
    readBytes: number,
    declaredBytes?: number,
    option: 'maxResponseBytes' | 'maxStreamBytes' = 'maxResponseBytes',
  ): Failure => {
    const limitBytes = option === 'maxStreamBytes' ? maxStreamBytes : maxResponseBytes
    const cause = new ResponseTooLargeError({
      provider: name,
      model,
      status: res.statusCode,
      limitBytes,
      option,
      readBytes,
      declaredBytes,
    })
    return fail(
      res,
      send,
      {
        kind: 'server_error',
        retryable: false,
        status: res.statusCode,
        message: `the ${res.statusCode} answer is larger than ${option} (${limitBytes} bytes); not read further, and not resent to this model: the provider generated, and billed, it`,
      },
      cause,
    )
  }

  /**
   * A reply's body as text: a 2xx answer whole, up to `maxResponseBytes`
   * (past it, a failure); an error body up to `errorBodyBytes` (past it,
   * cut: its status and headers classify it).
   */
  const readText = async (res: Reply, send: SendOptions): Promise<string | Failure> => {
    const answered = res.statusCode >= 200 && res.statusCode < 300
    if (answered) {
      // From here the provider has generated (and billed) a whole answer,
      // however its read ends: `callModel` charges an attempt the deadline
      // or the caller's signal ends now, which rethrows the stop as it is.
      send.answerStarted = true
      send.answerStatus = res.statusCode
      // Announced too long: refused before a byte of it is read.
      const declared = declaredLength(res.headers)
      if (declared !== undefined && declared > maxResponseBytes) {
        discardBody(res.body)
        return tooLarge(res, send, 0, declared)
      }
    }
    let read: Awaited<ReturnType<typeof readBody>>
    try {
      read = await readBody(res.body, answered ? maxResponseBytes : errorBodyBytes)
    } catch (thrown) {
      return brokeOff(thrown, res, send)
    }
    if (answered && !read.complete) return tooLarge(res, send, read.readBytes)
    return read.text
  }

  /**
   * A 2xx answer the dialect cannot read. One that begins as JSON is the
   * provider's, cut or garbled on its way (truncated, no choices): a whole
   * answer is sent after the whole generation, so it was generated and
   * billed — not resent to this model (it would be generated, and billed,
   * again), a fallback may answer, charged as a whole answer (`billedBy`),
   * as a stream's unreadable event is charged as a cut. One that does not
   * (an HTML page, plain text, nothing) is no generation at all but a
   * proxy's or a portal's page: asked again, free, as before.
   */
  const unreadable = (
    res: Reply,
    send: SendOptions,
    text: string,
    thrown: ProviderReplyError,
  ): Failure => {
    const status = res.statusCode
    if (!beginsAsJson(text)) {
      return fail(res, send, {
        kind: 'server_error',
        retryable: true,
        status,
        message: `the ${status} reply is not a ${name} answer (${text.length === 0 ? 'an empty body' : 'not JSON: a proxy’s page?'}); nothing was generated, asked again`,
      })
    }
    return fail(
      res,
      send,
      {
        kind: 'server_error',
        retryable: false,
        status,
        message: `the ${status} answer could not be read (${thrown.error.message}); not resent to this model: the provider generated, and billed, it`,
      },
      thrown,
    )
  }

  /**
   * A 2xx with no answer in it — no content and no finish reason (a whole
   * answer: `markNoAnswer`; a stream read whole: `StreamCollector.empty`):
   * a retryable `server_error`, as a stream that ends so is. Charged
   * nothing, unless it carried the provider's usage with an input count
   * (`usage`): the provider says it counted, and bills, the prompt, so the
   * attempt is charged by those counts (`ProviderError.usage`).
   */
  const noAnswer = (
    res: Reply,
    send: SendOptions,
    what: string,
    usage: Usage | undefined,
  ): Failure => ({
    ok: false,
    error: new ProviderError({
      provider: name,
      model,
      error: {
        kind: 'server_error',
        retryable: true,
        status: res.statusCode,
        message: `the ${res.statusCode} ${what} no answer (no content and no finish reason); asked again`,
        ...(usage !== undefined && usage.inputTokens > 0 ? { usage } : {}),
      },
      requestId: requestIdOf(res, send),
    }),
  })

  /** A whole body, read: an error (in an error status or in the 2xx), or the answer. */
  const answerOf = (
    res: Reply,
    send: SendOptions,
    text: string,
  ): { ok: true; response: ChatResponse } | Failure => {
    const answered = res.statusCode >= 200 && res.statusCode < 300
    const read = dialectFor(send)
    // Parsed once: read for an error (some servers send one with a 200),
    // then as the answer. A 2xx body is the answer, bounded by the read
    // above, and parsed whatever its size; an error body keeps the 1 MiB
    // guard (`parseJson`).
    const json = answered ? parseAnswerJson(text) : parseJson(text)
    const error = read.normalizeError({
      status: res.statusCode,
      headers: res.headers,
      body: text,
      json,
    })
    if (error !== undefined) return fail(res, send, error)
    let response: ChatResponse
    try {
      response = read.parseResponse(json ?? text, { headers: res.headers, text })
    } catch (thrown) {
      if (answered && isMalformedReply(thrown)) return unreadable(res, send, text, thrown)
      // A parser's error says 200; the answer's own status is what the
      // failure and its attempt record must say.
      if (isProviderReplyError(thrown) && thrown.error.status !== res.statusCode) {
        return fail(res, send, { ...thrown.error, status: res.statusCode }, thrown)
      }
      throw thrown
    }
    // A tool call too deep to write again (`argumentsText`) is an answer that
    // cannot be read: charging it, replaying it as a stream or sending it
    // back in the history threw a raw RangeError.
    const unwritable = answered
      ? unwritableToolCall(response.content, dialect.wire === 'openai')
      : undefined
    if (unwritable !== undefined) {
      const thrown = malformedReply(`tool call "${unwritable.name}" (arguments nested too deep)`)
      return unreadable(res, send, text, thrown)
    }
    if (answered && isNoAnswer(response)) {
      return noAnswer(
        res,
        send,
        'answer has',
        response.usageReported === false ? undefined : response.usage,
      )
    }
    return { ok: true, response: attribute(withReportedUsage(response)) }
  }

  /**
   * A whole-answer request answered with a stream (a server or proxy that
   * ignores `stream: false`, or streams every answer): read, whole, as the
   * stream it is. Parsed as JSON it was "no JSON at all", a proxy's page —
   * asked again, each time generated and billed, charged nothing, and the
   * call failed. What the stream's events say (an error frame, a cut before
   * its finish, an event that cannot be read) fails as it would streamed,
   * thrown to `attempt`, which returns a `ProviderError` as it is; a stream
   * with no answer in it is the empty body it amounts to.
   */
  const wholeOfStream = async (
    res: Reply,
    send: SendOptions,
    text: string,
  ): Promise<{ ok: true; status: number; response: ChatResponse } | Failure> => {
    const collector = new StreamCollector(dialect.wire === 'openai')
    const requestId = requestIdOf(res, send)
    const { events, usageSoFar } = streamOf(
      bodyOfText(text),
      dialectFor(send),
      send,
      context(send, requestId),
      maxStreamBytes,
    )
    for await (const event of events) collector.add(event)
    if (collector.empty) return noAnswer(res, send, 'reply is a stream with', usageSoFar())
    const response = collector.response(name, model, requestId)
    // A tool call too deep to write again: an answer that cannot be read, as
    // the JSON answer's (`unreadable`): not resent to this model.
    const unwritable = collector.unwritableToolCall
    if (unwritable !== undefined) {
      const thrown = malformedReply(`tool call "${unwritable}" (arguments nested too deep)`)
      return fail(
        res,
        send,
        {
          kind: 'server_error',
          retryable: false,
          status: res.statusCode,
          message: `the ${res.statusCode} answer could not be read (${thrown.error.message}); not resent to this model: the provider generated, and billed, it`,
        },
        thrown,
      )
    }
    return { ok: true, status: res.statusCode, response: attribute(withReportedUsage(response)) }
  }

  const adapter: ModelAdapter = {
    name,
    model,
    baseURL,
    dialect,
    apiKeys,
    prepare(request, stream) {
      return build(request, stream)
    },
    nextKey() {
      if (apiKeys.length === 0) return undefined
      const key = apiKeys[turn % apiKeys.length]
      turn = (turn + 1) % apiKeys.length
      return key
    },
    send(request, send): Promise<SendResult> {
      return attempt(request, send, false, async (res) => {
        const text = await readText(res, send)
        if (typeof text !== 'string') return text
        if (res.statusCode >= 200 && res.statusCode < 300 && looksLikeSse(text)) {
          return wholeOfStream(res, send, text)
        }
        const answer = answerOf(res, send, text)
        return answer.ok ? { ok: true, status: res.statusCode, response: answer.response } : answer
      })
    },
    open(request, send): Promise<OpenResult> {
      return attempt(request, send, true, async (res) => {
        const type = headerValue(res.headers, 'content-type') ?? ''
        const ok = res.statusCode >= 200 && res.statusCode < 300
        if (!ok || !isEventStream(type)) {
          // An error status, or a JSON body where a stream was asked for
          // (Qwen's throttling-in-200): classify it like any other answer.
          const text = await readText(res, send)
          if (typeof text !== 'string') return text
          if (ok && looksLikeSse(text)) {
            // A stream whose type a proxy left out or rewrote (`text/plain`):
            // read as the stream it is — parsed as JSON it was a malformed
            // reply, resent to the same model and charged nothing. Read whole
            // first (up to `maxResponseBytes`), so its events come at its end.
            const requestId = requestIdOf(res, send)
            return {
              ok: true,
              status: res.statusCode,
              ...streamOf(
                bodyOfText(text),
                dialectFor(send),
                send,
                context(send, requestId),
                maxStreamBytes,
              ),
              providerRequestId: requestId,
            }
          }
          const answer = answerOf(res, send, text)
          if (!answer.ok) return answer
          return {
            ok: true,
            status: res.statusCode,
            events: eventsOf(answer.response),
            providerRequestId: answer.response.providerRequestId,
          }
        }
        // A stream that announces its length was buffered whole on its way
        // (a proxy): one past the limit is refused before a byte of it is
        // read, as a whole answer is. Else its bytes are counted as read
        // (`maxStreamBytes` in all).
        // (undici's names are lower-case: a chunked stream, the usual one,
        // costs one property read here, not a scan of its headers.)
        const declared =
          res.headers['content-length'] === undefined ? undefined : declaredLength(res.headers)
        if (declared !== undefined && declared > maxStreamBytes) {
          discardBody(res.body)
          return tooLarge(res, send, 0, declared, 'maxStreamBytes')
        }
        // The stream's failures (an error frame, a cut, an unreadable event)
        // carry the 200's request id, as its answer does.
        const requestId = requestIdOf(res, send)
        return {
          ok: true,
          status: res.statusCode,
          ...streamOf(res.body, dialectFor(send), send, context(send, requestId), maxStreamBytes, {
            // JSON under a stream's Content-Type: a whole answer (or an error
            // in the 200), read as `application/json` would be.
            limitBytes: maxResponseBytes,
            tooLarge: (readBytes) => tooLarge(res, send, readBytes).error,
            answer: (text) => {
              const answer = answerOf(res, send, text)
              if (!answer.ok) throw answer.error
              return eventsOf(answer.response)
            },
          }),
          providerRequestId: requestId,
        }
      })
    },
    close: async () => {
      await own?.close()
    },
  }

  // Its `send` gives undici no signal for NEVER_ABORTED (see `prepare`), and
  // reads the signal only for `aborted` and `reason` (classifyThrown).
  takesNeverAborted(adapter.send)

  /** The answer names the adapter as its provider, and the model asked for when it names none. */
  function attribute(response: ChatResponse): ChatResponse {
    return Object.assign({}, response, { provider: name, model: response.model || model })
  }

  return adapter
}

/** A whole answer replayed as stream events (a provider that answered a stream request with JSON). */
async function* eventsOf(response: ChatResponse): AsyncGenerator<StreamEvent, void, undefined> {
  // Each call's place among the answer's calls: two a server gave one id
  // stay two calls (the collector joins deltas by index, else by id).
  let call = 0
  for (const block of response.content) {
    // A refusal stays marked: replayed as plain text it joined the answer,
    // and `result.refusal` was missing — a client parsed it as the answer.
    if (block.type === 'text') {
      yield block.refusal === true
        ? { type: 'text', text: block.text, refusal: true }
        : { type: 'text', text: block.text }
    } else if (block.type === 'thinking' && block.redacted === true) {
      if (block.signature) yield { type: 'signature', signature: block.signature, redacted: true }
    } else if (block.type === 'thinking') {
      // With the field it was said under (`ThinkingBlock.field`), as the block kept it.
      yield block.field === undefined
        ? { type: 'thinking', thinking: block.thinking }
        : { type: 'thinking', thinking: block.thinking, field: block.field }
      if (block.signature) yield { type: 'signature', signature: block.signature }
    } else if (block.type === 'tool_call') {
      yield {
        type: 'tool_call',
        id: block.id,
        name: block.name,
        // As received when it came as text: parsing rounded integers past 2^53.
        argumentsDelta: block.rawArguments ?? JSON.stringify(block.arguments ?? {}),
        index: call++,
      }
    }
  }
  yield {
    type: 'finish',
    finishReason: response.finishReason,
    // The model that answered (a dated snapshot of the alias asked for) and
    // the provider's own reason for an `error` finish (or a `length` one
    // because the context window is full), as a stream's finish carries
    // them: without them the answer named the adapter's model, and a failure
    // lost its `finishReason:<REASON>` code.
    model: response.model,
    ...(response.providerFinishReason === undefined
      ? {}
      : { providerFinishReason: response.providerFinishReason }),
    // None when the answer had none: its zeros would read as a report of none used.
    usage: response.usageReported === false ? undefined : response.usage,
    id: response.id,
    // What the answer said of itself, as a stream's finish carries it: replayed
    // without them, a stream request answered whole lost them (result, record,
    // span, and the gateway's chunks).
    ...(response.systemFingerprint === undefined
      ? {}
      : { systemFingerprint: response.systemFingerprint }),
    ...(response.serviceTier === undefined ? {} : { serviceTier: response.serviceTier }),
    ...(response.annotations === undefined ? {} : { annotations: response.annotations }),
    ...(response.logprobs === undefined ? {} : { logprobs: response.logprobs }),
  }
}

/**
 * The media type is `text/event-stream`, in any case, parameters aside
 * (`Text/Event-Stream; charset=utf-8` is one). The usual spelling is checked
 * first, without allocating: this runs for every streamed answer.
 */
function isEventStream(type: string): boolean {
  if (type.startsWith('text/event-stream')) {
    const next = type.charCodeAt(17)
    if (Number.isNaN(next) || next === 0x3b || next === 0x20 || next === 0x09) return true
  }
  const semicolon = type.indexOf(';')
  return (
    (semicolon === -1 ? type : type.slice(0, semicolon)).trim().toLowerCase() ===
    'text/event-stream'
  )
}

/**
 * The body's first character past JSON whitespace opens an object or an
 * array: what every provider's answer begins with. Indexes, not trim(): no
 * copy of a large body.
 */
function beginsAsJson(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code === 0x20 || code === 0x0a || code === 0x0d || code === 0x09) continue
    return code === 0x7b || code === 0x5b
  }
  return false
}

/** A body that starts as SSE does: a field (`data:`, `event:`, `id:`, `retry:`) or a comment (`:`). */
const SSE_START = /^\s*(?:data|event|id|retry)?:/

function looksLikeSse(text: string): boolean {
  return SSE_START.test(text)
}

/** Text already read, as the byte body `readEvents` reads. */
function bodyOfText(text: string): EventBody {
  return {
    async *[Symbol.asyncIterator]() {
      yield new TextEncoder().encode(text)
    },
    destroy() {},
  }
}

function describe(value: unknown): string {
  if (typeof value === 'function') return `a function${value.name ? ` (${value.name})` : ''}`
  return value === null ? 'null' : `a ${typeof value}`
}

function lowerCaseNames(
  headers: Readonly<Record<string, string | undefined>> | undefined,
): Record<string, string> | undefined {
  if (headers === undefined) return undefined
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) out[name.toLowerCase()] = value
  }
  return out
}

/**
 * `usageReported: false` only while `usage` is still the zeros it stands
 * for. A dialect of your own that wraps a built-in parser and fills `usage`
 * from where its provider puts it (`{ ...parsed, usage }`) copies the flag
 * along with the rest: its counts stand, and the flag goes here, where the
 * parser's answer enters, so that nothing after (the charge, the record,
 * the gateway) has to doubt it.
 */
function withReportedUsage(response: ChatResponse): ChatResponse {
  if (response.usageReported !== false) return response
  const { usage } = response
  if (usage.inputTokens === 0 && usage.outputTokens === 0) return response
  const { usageReported: _stale, ...reported } = response
  return reported
}

/**
 * A stream's events read through one parser of `dialect`, and that parser's
 * counts so far (`OpenResult.usageSoFar`), for charging a stream cut before
 * its usage event, and the answer's id so far (`OpenResult.responseIdSoFar`),
 * for the record of one cut before its finish.
 */
function streamOf(
  body: EventBody,
  dialect: Pick<Dialect, 'createStreamParser'>,
  send: SendOptions,
  context: Parameters<typeof readEvents>[3],
  limitBytes: number,
  whole?: WholeBody,
): {
  events: AsyncIterable<StreamEvent>
  usageSoFar: () => Usage | undefined
  responseIdSoFar: () => string | undefined
  serviceTierSoFar: () => string | undefined
  logprobsSoFar: () => Logprobs | undefined
} {
  const parser = dialect.createStreamParser()
  return {
    events: readEvents(
      body,
      { createStreamParser: () => parser },
      send,
      context,
      limitBytes,
      whole,
    ),
    // A custom dialect's getter that throws reports nothing: the charge falls back as without counts.
    usageSoFar: () => {
      try {
        return parser.usageSoFar
      } catch {
        return undefined
      }
    },
    // Likewise: a getter that throws (or gives no string) names no tier.
    serviceTierSoFar: () => {
      try {
        const tier: unknown = parser.serviceTier
        return typeof tier === 'string' && tier !== '' ? tier : undefined
      } catch {
        return undefined
      }
    },
    // Likewise: a getter that throws hands on none.
    logprobsSoFar: () => {
      try {
        return parser.logprobsSoFar
      } catch {
        return undefined
      }
    },
    // Likewise: a getter that throws names no id.
    responseIdSoFar: () => {
      try {
        return parser.responseId
      } catch {
        return undefined
      }
    },
  }
}

/**
 * Gives undici, in place of `options.signal`, one that follows it with a
 * reason a Node stream can be destroyed with (core's `streamableReason`):
 * undici destroys the answer's body with the signal's reason, and Node reads
 * its `stack` first, which throws for a revoked Proxy or an Error whose
 * `message` getter throws — uncaught, out of undici's abort listener. The
 * adapter's own checks read `send.signal`, whose reason stays the caller's:
 * the call still rejects with it. Returns the unlink (the follower's
 * listener goes when the body closes or the request fails).
 */
function streamSafeSignal(options: { signal?: unknown }): () => void {
  const signal = options.signal as AbortSignal | undefined
  if (signal === undefined) return noop
  const follower = new AbortController()
  options.signal = follower.signal
  if (signal.aborted) {
    follower.abort(streamableReason(signal.reason))
    return noop
  }
  const onAbort = () => follower.abort(streamableReason(signal.reason))
  signal.addEventListener('abort', onAbort, { once: true })
  return () => signal.removeEventListener('abort', onAbort)
}

function noop(): void {}

/** Decoders for the content codings a provider may send though asked for identity (RFC 9110 §8.4.1). */
const DECODERS: Readonly<Record<string, (first: Uint8Array) => Transform>> = {
  gzip: () => zlib.createGunzip(),
  'x-gzip': () => zlib.createGunzip(),
  deflate: (first) =>
    ((first[0] as number) & 0x0f) === 0x08 ? zlib.createInflate() : zlib.createInflateRaw(),
  br: () => zlib.createBrotliDecompress(),
  ...(typeof (zlib as { createZstdDecompress?: unknown }).createZstdDecompress === 'function'
    ? {
        zstd: () =>
          (zlib as unknown as { createZstdDecompress(): Transform }).createZstdDecompress(),
      }
    : {}),
}

/**
 * The reply with its body decoded as its `Content-Encoding` says, the last
 * coding applied undone first (`gzip, br`). A coding not known is left as it
 * is (read, it is no JSON). `pipeline` destroys the whole chain when either
 * end fails or is destroyed: `readBody`'s limit closes the connection as
 * before, and a corrupt coding fails the read as a cut body does.
 */
function decodedReply(res: Reply): Reply {
  const header = headerValue(res.headers, 'content-encoding')
  if (header === undefined) return res
  const codings = header
    .split(',')
    .map((coding) => coding.trim().toLowerCase())
    .filter((coding) => coding !== '' && coding !== 'identity')
  if (codings.length === 0 || !codings.every((coding) => Object.hasOwn(DECODERS, coding))) {
    return res
  }
  const stages = codings
    .reverse()
    .map((coding) => new LazyDecoder(DECODERS[coding] as (first: Uint8Array) => Transform))
  const body = (pipeline as (...streams: unknown[]) => Transform)(res.body, ...stages, noop)
  return Object.assign({}, res, { body: body as unknown as Reply['body'] })
}
