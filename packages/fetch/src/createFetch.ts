import { resolveObjectURL } from 'node:buffer'
import {
  currentDeadline,
  type Deadline,
  describeValue,
  hasErrorCode,
  isAbortSignal,
  optionError,
  refuseUnknownOptions,
} from '@hourglass/core'
import {
  Agent,
  type Dispatcher,
  type RequestInfo,
  type RequestInit,
  type Response,
  FormData as UndiciFormData,
  Request as UndiciRequest,
  Response as UndiciResponse,
  errors as undiciErrors,
  fetch as undiciFetch,
} from 'undici'
import type { Attempt } from './Attempt.js'
import { adoptFormData } from './adoptFormData.js'
import { adoptedForm, adoptedUpload, adoptRequest, type FetchInput } from './adoptRequest.js'
import { parsedEventUrl } from './channels.js'
import { type ConnectorOptions, connectorFor } from './createConnector.js'
import { FETCH_ATTEMPT, type FetchAttempt, interceptorFor } from './deadlineInterceptor.js'
import { checkDeadline } from './deadlineOption.js'
import { hasHeader, isRepeatable, rereadableHeaders } from './dispatchHeaders.js'
import { BodyNotReadError } from './errors/BodyNotReadError.js'
import { RedirectWithStreamBodyError } from './errors/RedirectWithStreamBodyError.js'
import { TooManyRedirectsError } from './errors/TooManyRedirectsError.js'
import { UnexpectedRedirectError } from './errors/UnexpectedRedirectError.js'
import { type UrlRefusal, UrlRefusedError } from './errors/UrlRefusedError.js'
import { unparsedWithoutQuery } from './errors/withoutQuery.js'
import { fetchMethod } from './fetchMethod.js'
import { keepOwnStack } from './keepOwnStack.js'
import { noBudgetError } from './noBudgetError.js'
import { OutboundCall, type OutboundCallInit, RetryWaits, type SendResult } from './OutboundCall.js'
import { FETCH_OPTION_NAMES, mergeRetry, type RetryOptions, resolveOptions } from './options.js'
import { refuseConnectorOptions } from './refuseConnectorOptions.js'
import { snapshotBody, snapshotHeaders, snapshotInit } from './snapshotInit.js'
import { type StoppableBody, stoppableBody } from './stoppableBody.js'
import { waitEndingDispatcher } from './waitEndingDispatcher.js'

export interface CreateFetchOptions extends ConnectorOptions {
  /**
   * The dispatcher to send through; default a new undici `Agent` with
   * `createConnector(options)`. A dispatcher of your own keeps its own connect
   * logic, so the DNS and connect phases are then bounded by the deadline and
   * its connector's own limits (a `createConnector` in it keeps its own),
   * and its own `headersTimeout` / `bodyTimeout` (undici's default: 300 s):
   * the phase limits only narrow them. `tls` and `lookup` beside it are
   * refused (its connector's to set), unless a `createConnector` of yours
   * took the very same value.
   */
  dispatcher?: Dispatcher
}

// undici's RequestInit, widened to the global one's field types (@types/node's,
// from the undici Node bundles): undici reads either, and a `typeof fetch` slot
// (openai-node's `fetch` option) then takes this fetch.
export interface HourglassRequestInit extends Omit<RequestInit, 'body' | 'headers' | 'dispatcher'> {
  /** undici's bodies, the global `RequestInit`'s, or Node's global `FormData` (sent as undici's: multipart, file names kept). */
  body?: RequestInit['body'] | globalThis.RequestInit['body'] | globalThis.FormData
  /** undici's headers or the global ones (`new Headers()`, a global Request's `headers`). */
  headers?: RequestInit['headers'] | globalThis.RequestInit['headers']
  /** An undici Dispatcher (this package's undici's, or the type @types/node gives the global RequestInit's, where it has one). */
  dispatcher?:
    | RequestInit['dispatcher']
    | (globalThis.RequestInit extends { dispatcher?: infer D } ? D : never)
  /** The deadline of this call; default `currentDeadline()`. */
  deadline?: Deadline
  /** Retry rules for this call, field by field over the factory's (a factory's `false`: every rule off, so only those named here apply); `false` = no retry. */
  retry?: RetryOptions | false
}

/** A WHATWG `fetch` that carries and enforces the deadline. */
export interface HourglassFetch {
  /** undici's Response, of the global one's shape too. */
  (input: FetchInput, init?: HourglassRequestInit | null): Promise<Response & globalThis.Response>
  /** The composed dispatcher (with the deadline interceptor). */
  readonly dispatcher: Dispatcher
  /** Close the connections this fetch opened (only the Agent it created itself). */
  close(): Promise<void>
  /**
   * Whether a call made now with this deadline (default `currentDeadline()`)
   * and signal would fail at once, nothing sent: the signal aborted, the
   * deadline over, or under this fetch's `minBudgetMs` left. The check the
   * call itself makes, for a caller that must know afterwards whether its
   * failed request ever left (the error is the same as for one cut in flight).
   */
  wouldRefuse(init?: { deadline?: Deadline | undefined; signal?: AbortSignal | undefined }): boolean
}

/** @internal Lets `probe` see each attempt's phase timings. */
export interface FetchHooks {
  /** Called as each attempt is made (its timings are complete once it is `done`). */
  onAttempt?: (attempt: Attempt) => void
}

/**
 * `fetch` on undici that takes `init.deadline` (else the current one), sends
 * what is left in `x-deadline-remaining-ms`, bounds DNS, connect, headers and
 * body idle by `min(limit, time left)`, and retries only on evidence. The
 * Response's body keeps honouring the deadline while it is read.
 *
 * Options are resolved once, here, for the agent, its connector and the
 * interceptor; the retries run in the same loop as the interceptor's
 * (`OutboundCall`).
 */
export function createFetch(
  options: CreateFetchOptions = {},
  hooks: FetchHooks = {},
): HourglassFetch {
  refuseUnknownOptions(options, FETCH_OPTION_NAMES, 'createFetch()')
  const config = resolveOptions(options, 'createFetch()')
  if (options.dispatcher != null && !isDispatcher(options.dispatcher)) {
    // Composed with our layer below: the caller read "(options.dispatcher ??
    // own).compose is not a function". Named as a call's own `dispatcher` is.
    throw notADispatcher(options.dispatcher)
  }
  if (options.dispatcher != null) refuseConnectorOptions(options)
  // Our own Agent has no header or body timer of its own (undici's default
  // is 300 s): the phase limits and the deadline are the only bounds, so a
  // `headersTimeoutMs: 600_000` means 10 minutes. A dispatcher of yours keeps
  // its own values, and ours narrow them (sendAttempt).
  const own = options.dispatcher
    ? undefined
    : new Agent({ connect: connectorFor(config, options.tls), headersTimeout: 0, bodyTimeout: 0 })
  const composed = (options.dispatcher ?? own!).compose(interceptorFor(config))
  // Calls waiting to retry, which close() ends: undici's close waits for the
  // requests in flight, not for a call between two attempts, which slept on
  // (a Retry-After of up to a minute, keeping the process up) and then failed
  // on the closed Agent. Only with our own Agent: yours stays open.
  const waiting = own ? new RetryWaits() : undefined
  // Its close() and destroy() end those waits too (yours, again, ends none).
  const dispatcher = waiting ? waitEndingDispatcher(composed, waiting) : composed
  // A call's own `init.dispatcher` (undici fetch's per-call option: a
  // ProxyAgent, a MockAgent) is the one it goes through, under this fetch's
  // deadline layer, as `dispatcher` above is. It was replaced by ours: the
  // request bypassed the caller's proxy. One layer per dispatcher, made once.
  const layered = new WeakMap<object, Dispatcher.Dispatch>()
  const through = (theirs: Dispatcher): Dispatcher.Dispatch => {
    let dispatch = layered.get(theirs)
    if (dispatch === undefined) {
      dispatch = interceptorFor(config)(theirs.dispatch.bind(theirs))
      layered.set(theirs, dispatch)
    }
    return dispatch
  }

  const call = (input: FetchInput, given?: HourglassRequestInit | null): Promise<Response> => {
    // fetch() never throws: a bad per-call option (a retry rule, a method
    // that is not a string) rejects the promise it returns.
    try {
      return start(input, given)
    } catch (error) {
      return Promise.reject(error)
    }
  }

  const start = (
    givenInput: FetchInput,
    givenInit?: HourglassRequestInit | null,
  ): Promise<Response> => {
    if (givenInit != null && typeof givenInit !== 'object' && typeof givenInit !== 'function') {
      // undici's fetch refuses it as a dictionary it cannot read; read as
      // one with no members, the request went out as a GET.
      throw new TypeError(`init must be an object (a RequestInit), got ${describeValue(givenInit)}`)
    }
    // null, like undefined, is no init: fetch() takes both.
    const given = givenInit ?? {}
    // A URL object is read now, as fetch reads it (its href): each attempt
    // read it again, so one the caller changed after the call (a loop
    // setting `url.pathname` for each item) had the retry sent elsewhere.
    const input = adoptRequest(
      givenInput instanceof URL ? givenInput.href : givenInput,
      given.body != null,
    )
    const { deadline: explicit, retry } = given
    const request = input instanceof UndiciRequest ? input : undefined
    // As fetch reads it (a string, `null` included; `method: 5` failed here
    // with "….toUpperCase is not a function"): the retry rules judge the
    // method that is sent.
    const method = fetchMethod(given.method, request?.method)
    // Node's global FormData, rebuilt as undici's (a copy of the init only then).
    const adopted = adoptFormData(given.body)
    // A form as it is now (snapshotBody); one rebuilt above is a copy already.
    const body = adopted === given.body ? snapshotBody(adopted) : adopted
    // A stream body is read through a reader the call can stop (see
    // stoppableBody): undici's fetch went on draining it after the call ended.
    // A global Request's was wrapped when it was rebuilt; the init's body, if
    // any, is sent in its place.
    const initUpload = stoppableBody(body)
    const sent = initUpload ? initUpload.body : body
    const upload =
      initUpload ??
      (request && input !== givenInput && given.body == null ? adoptedUpload(request) : undefined)
    // Read by every attempt and by the retry rules (an Idempotency-Key), so
    // taken now, as the init's members are (snapshotInit): a one-shot
    // iterator of pairs (`map.entries()`) read by the first attempt left a
    // retry without them, and a record the caller changed after the call
    // reached its retries.
    const rereadable = rereadableHeaders(given.headers as never) as RequestInit['headers']
    const headers = snapshotHeaders(rereadable) as RequestInit['headers']
    const init = snapshotInit(given, sent, headers)
    // The Request's own signal when the init brings none, as fetch() does;
    // `signal: null` in the init is none at all (fetch drops the Request's
    // then: a call it would finish was aborted here).
    const signal = init.signal === null ? undefined : (init.signal ?? request?.signal ?? undefined)
    if (signal !== undefined && !isAbortSignal(signal)) {
      // fetch refuses it too, but only after our attempt has tried to listen
      // to it: the caller read "signal.addEventListener is not a function".
      throw optionError('signal', 'an AbortSignal', signal)
    }
    const theirs: unknown = init.dispatcher
    if (theirs != null && typeof (theirs as { dispatch?: unknown }).dispatch !== 'function') {
      // Our layer is put over it (`through`): the caller read "Cannot read
      // properties of undefined (reading 'bind')".
      throw notADispatcher(theirs)
    }
    const outbound = new OutboundCall(
      new FetchCallInit({
        config,
        deadline: explicit ?? currentDeadline(),
        // Ours replaces it on the copy each attempt sends.
        signal,
        method,
        retry: mergeRetry(config.retry, retry),
        // The body sent: the init's when it brings one (fetch leaves the
        // Request's own unread then, so it is no reason not to retry).
        replayable:
          !(request?.body && given.body == null) &&
          !(
            body &&
            typeof body === 'object' &&
            ('getReader' in body || Symbol.asyncIterator in body)
          ),
        onAttempt: hooks.onAttempt,
        // fetch.close() closes our Agent, not a call's own dispatcher: its waits are not ours to end.
        waiting: init.dispatcher == null ? waiting : undefined,
        // A dispatcher of the caller's: its close() or destroy() ends a wait to retry too (no RetryWaits hears it).
        theirDispatcher: init.dispatcher ?? options.dispatcher ?? undefined,
        target: request ?? input,
        // As the caller gave them, read now: an `undefined` value in a record
        // is no Idempotency-Key (hasHeader), where the copy holds "undefined".
        headers: rereadable ?? request?.headers,
      }),
    )
    // Refused unsent for it (OutboundCall): the caller has already left, so
    // its stream body is cancelled with that reason, as undici's fetch
    // cancels it (the fetch spec's "abort the fetch() call"). Left as given,
    // its source stayed open — a Node file stream's descriptor for as long
    // as the caller held the stream. A refusal for the budget leaves it, for
    // the call to be made again.
    if (signal?.aborted) upload?.stop(signal.reason)
    return outbound.run((number) => send(outbound, number, input, init, upload))
  }

  /** One attempt through undici's fetch; the interceptor gets the call through a per-call dispatcher. */
  const send = async (
    outbound: OutboundCall,
    number: number,
    input: RequestInfo,
    init: RequestInit,
    upload: StoppableBody | undefined,
  ): Promise<SendResult<Response>> => {
    let attempt: Attempt | undefined
    // fetch ends a body it has handed out only through its signal: the
    // attempt's stop (phase limit, deadline, caller) aborts this one, so a
    // body read fails with that reason, not undici's bare "terminated".
    const controller = new AbortController()
    let restoreStack: (() => void) | undefined
    // fetch follows redirects inside one attempt, each hop a dispatch of its
    // own (`hops`): a second hop means a server has answered this request already.
    const carrier: FetchAttempt = {
      call: outbound,
      number,
      hops: 0,
      started: (started) => {
        carrier.hops += 1
        // The hop before, whose redirect this one follows: followed, unless
        // this hop was refused unsent (the budget spent, the caller gone).
        attempt?.redirectSettled(started.reason)
        attempt = started
        started.redirectMode = redirectModeOf(init, input)
        started.onAbort((reason) => {
          // fetch() rejects with this reason, and writes its stack onto it.
          restoreStack = keepOwnStack(reason)
          controller.abort(reason)
          // A stream body is sent once (never retried): its call is over.
          upload?.stop(reason)
        })
        // However it ended — an answer too: a server that answers before it
        // has read the upload (an early 413) leaves it unfinished, and
        // undici's fetch read on from the caller's stream (a file read to
        // its end, an endless generator for ever) to drop every chunk. Once
        // the body was all sent, there is nothing left to stop.
        // Over HTTP/2 the rest is reset, not ended, should undici read on
        // (Attempt.cutUpload): its end read as the whole upload.
        if (upload) {
          started.onFinish((ended) => upload?.stop(ended.error, () => ended.cutUpload()))
        }
      },
    }
    const theirs = init.dispatcher ?? undefined
    const theirDispatch = theirs ? through(theirs) : undefined
    // The hop in flight: fetch dispatches the next one only once it follows
    // this one's redirect, which it leaves unread and unended (see FetchHop).
    let hop: FetchHop | undefined
    const perCall = {
      isMockActive: ((theirs ?? dispatcher) as { isMockActive?: boolean }).isMockActive ?? false,
      dispatch(opts: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
        if (hop !== undefined) {
          // The redirect's answer is the hop's end, as a retried status's
          // is: its attempt ends with that status, and then its request
          // stops, before the next hop asks for a connection. An upload
          // still going (a 303 answered early, its answer still open) is
          // reset first over HTTP/2: undici's abort ends the stream (NO_ERROR,
          // END_STREAM first), which the server reads as the whole body.
          attempt?.finish()
          attempt?.cutUpload()
          hop.leave()
        }
        // A redirect that keeps a form body (307, 308): sent with the boundary its
        // Content-Type names. Not under a MockAgent: fetch hands it the form itself.
        const form =
          hop === undefined || opts.body == null || perCall.isMockActive
            ? undefined
            : init.body instanceof UndiciFormData
              ? init.body
              : init.body == null && input instanceof UndiciRequest
                ? adoptedForm(input)
                : undefined
        const hopOpts = form === undefined ? opts : formResent(opts, form)
        hop = new FetchHop(handler as LegacyHandler)
        ;(hopOpts as { [FETCH_ATTEMPT]?: FetchAttempt })[FETCH_ATTEMPT] = carrier
        const sent = hop as unknown as Dispatcher.DispatchHandler
        return theirDispatch ? theirDispatch(hopOpts, sent) : dispatcher.dispatch(hopOpts, sent)
      },
    }
    let response: Response
    try {
      // A copy of the caller's init with our signal and dispatcher. `deadline`
      // and `retry` stay in it: fetch reads only the members RequestInit
      // defines. Object.assign, not a spread: V8's generic clone path costs
      // several times more, on every call.
      const fetchInit: RequestInit = Object.assign({}, init)
      fetchInit.signal = controller.signal
      fetchInit.dispatcher = perCall as unknown as Dispatcher
      // The caller's Request as it is, not a clone: one with a body is never
      // sent twice (not replayable) and is left used, as fetch leaves it; one
      // without can be sent again as it is.
      response = await undiciFetch(input, fetchInit)
    } catch (thrown) {
      restoreStack?.()
      const error =
        attempt?.reason ??
        attempt?.error ??
        refusedRedirect(thrown, attempt, outbound.init.replayable, init, input) ??
        unexpectedRedirect(thrown, attempt) ??
        unparsedUrl(thrown, input) ??
        refusedUrl(thrown, attempt, input, outbound.init.method) ??
        unwrap(thrown, carrier.hops)
      attempt?.finish(error)
      // A redirect hop that ended before fetch failed at it: its attempt-end says so.
      attempt?.redirectSettled(error)
      // A redirect fetch would not follow (`redirect: 'error'`, a stream
      // body, the limit, a refused Location) is left unread as a followed one is.
      hop?.leave()
      // Failed before an answer (a reset, a refused connect or redirect): the
      // stream body, sent once, is read no more. Even one not read yet is
      // cancelled: undici's fetch has locked it for good, its source left open.
      // Not a call undici refused before dispatching anything (its Request
      // refused: a stream without `duplex`, a GET with a body; a URL it does
      // not fetch): nothing was read, and undici leaves the body as given,
      // for the caller to send with the call fixed (cancelled, it was
      // "disturbed or locked" then, as a call refused for its budget is not).
      if (carrier.hops > 0) upload?.stop(error)
      const signal = outbound.init.signal
      if (signal?.aborted) {
        const reason: unknown = signal.reason
        // The caller's signal ended the call (a slice's signal when the client
        // left or the slice ran out): never retried, but said so, as the
        // interceptor, a body read and a cancelled deadline say it (`aborted`,
        // `no-budget`; a reason of the caller's own — `AbortSignal.timeout`'s
        // `TimeoutError` — `not-retryable`, as the interceptor says it: it
        // was announced by the interceptor alone). Without this,
        // `fetch(url, { signal })` announced nothing where `fetch(url)` under
        // the same deadline did. `callerAborted`: no retry is ever announced here.
        outbound.judge(
          {
            error: reason,
            bytesReceived: attempt?.bytesReceived ?? 0,
            redirected: carrier.hops > 1,
            callerAborted: true,
          },
          number,
        )
        throw reason
      }
      const delayMs = outbound.judge(
        {
          error,
          bytesReceived: attempt?.bytesReceived ?? 0,
          // A 1xx came first: the server has the request (Attempt.interim).
          afterHeaders: attempt?.answerBegun === true,
          redirected: carrier.hops > 1,
          dispatchThrew: attempt?.dispatchThrew === true,
        },
        number,
      )
      if (delayMs === undefined) throw error
      return { retry: true, delayMs }
    }
    const delayMs = outbound.judge(
      { status: response.status, header: headerLookup(response), bytesReceived: 0 },
      number,
    )
    if (delayMs !== undefined) {
      // This answer is the retry's evidence, not a failure: its attempt ends
      // with its status, as the interceptor's does, before the body is
      // cancelled. Ended by the cancel instead, a body still arriving (any
      // more than a few KB) ended it as `AbortError` — an errored egress
      // span for a 503 that was retried. An upload still going is reset
      // first over HTTP/2 (the cancel's abort ends it: the server read the
      // part it had as the whole body, then the retry's whole body again).
      attempt?.finish()
      attempt?.cutUpload()
      await response.body?.cancel()
      return { retry: true, delayMs }
    }
    // A failure while the body is read is past the first byte: never
    // retried, but said so — judged as the interceptor judges it, so the
    // deadline running out mid-body says `no-budget`, not `after-first-byte`.
    // The caller's own stop of the body is no failure: nothing is said.
    // The caller's cancel of this body is told from a failure by the body itself (Attempt.callerBody).
    if (attempt !== undefined && !attempt.done) attempt.callerBody = response.body ?? undefined
    attempt?.onFinish((ended) => {
      // Dropped unread: nobody wanted this body, so there is no failure to retry.
      // By code, not `instanceof`: the error may be the caller's abort reason,
      // and `instanceof` throws on a revoked Proxy.
      if (ended.error === undefined || hasErrorCode(ended.error, BodyNotReadError.code)) return
      // The caller stopped reading (cancelled the body, aborted its signal):
      // nothing failed and nothing was left to retry — judged, it was counted
      // as a skipped retry (`aborted`) on every response read only in part.
      if (ended.stoppedBy === 'caller') return
      outbound.judge(
        { error: ended.error, afterHeaders: true, bytesReceived: ended.bytesReceived },
        number,
      )
    })
    return { retry: false, value: response }
  }

  // Once: a second close() (two shutdown hooks, a test's afterEach) resolves
  // with the first instead of rejecting with undici's ClientDestroyedError.
  let closing: Promise<void> | undefined
  // undici's Response is of the global one's shape: typed as both (HourglassFetch).
  return Object.assign(
    call as (
      input: FetchInput,
      init?: HourglassRequestInit | null,
    ) => Promise<Response & globalThis.Response>,
    {
      dispatcher,
      wouldRefuse: (init?: {
        deadline?: Deadline | undefined
        signal?: AbortSignal | undefined
      }) => {
        // What the call refuses as a mistake, this refuses with the call's
        // TypeError: a deadline of 500 threw "deadline.remaining is not a
        // function" here, and `{ aborted: true }` was read as a signal.
        const signal = init?.signal ?? undefined
        if (signal !== undefined && !isAbortSignal(signal)) {
          throw optionError('signal', 'an AbortSignal', signal)
        }
        const deadline = init?.deadline ?? currentDeadline()
        checkDeadline(deadline)
        return signal?.aborted === true || noBudgetError(deadline, config.minBudgetMs) !== undefined
      },
      close: (): Promise<void> => {
        if (closing) return closing
        // After `fetch.dispatcher.destroy()` (the README's advice for held
        // bodies) there is nothing left to close: resolved, not undici's
        // ClientDestroyedError for a shutdown hook that calls both.
        closing = own
          ? own.close().then(
              () => undefined,
              (error: unknown) => {
                if (!own.destroyed) throw error
              },
            )
          : Promise.resolve()
        // The error a call made now gets from undici, saying why this one got it.
        waiting?.end(
          new undiciErrors.ClientClosedError(
            'fetch.close() was called while this call waited to retry: it was not sent again',
          ),
        )
        return closing
      },
    },
  )
}

/** Has the `dispatch` and `compose` our layer uses (an Agent, a ProxyAgent, a MockAgent, one already composed). */
function isDispatcher(value: unknown): value is Dispatcher {
  const candidate = value as { dispatch?: unknown; compose?: unknown } | null
  return (
    typeof candidate === 'object' &&
    candidate !== null &&
    typeof candidate.dispatch === 'function' &&
    typeof candidate.compose === 'function'
  )
}

function notADispatcher(value: unknown): TypeError {
  return new TypeError(
    `dispatcher must be an undici Dispatcher (an Agent, a ProxyAgent, …), got ${describeValue(value)}`,
  )
}

/** undici's first handler API, which its fetch() speaks. */
interface LegacyHandler {
  onConnect?(abort: (reason?: Error) => void, context?: unknown): void
  onResponseStarted?(): void
  onHeaders?(status: number, rawHeaders: Buffer[], resume: () => void, statusText: string): boolean
  onData?(chunk: Buffer): boolean
  onComplete?(trailers: Buffer[] | null): void
  onError?(error: Error): void
  onUpgrade?(status: number, rawHeaders: Buffer[] | null, socket: unknown): void
  onBodySent?(chunkSize: number, totalBytesSent: number): void
  onRequestSent?(): void
}

/**
 * fetch's handler for one hop, which createFetch can end. fetch follows a
 * redirect without reading its body or ending its request
 * (nodejs/undici#5728): a body longer than its stream's buffer (~64 KB)
 * stopped the socket for good — a connection held for ever, `fetch.close()`
 * waiting on it, the hop's `attempt-end` never published, and under an
 * Agent with one connection per origin the redirect's target queued behind
 * it until the deadline. `leave()` aborts that request (undici closes the
 * socket) and keeps its end from fetch: fetch's handler would take an error
 * of the hop it left for the whole call's and stop the next hop with it.
 */
class FetchHop implements LegacyHandler {
  readonly #inner: LegacyHandler
  #abort: ((reason?: Error) => void) | undefined
  #left = false

  constructor(inner: LegacyHandler) {
    this.#inner = inner
  }

  /** fetch is done with this hop: stop its request (a no-op once it completed) and drop what comes of it. */
  leave(): void {
    if (this.#left) return
    this.#left = true
    this.#abort?.(new Error('fetch left this redirect behind'))
  }

  onConnect(abort: (reason?: Error) => void, context?: unknown): void {
    this.#abort = abort
    if (this.#left) abort(new Error('fetch left this redirect behind'))
    else this.#inner.onConnect?.(abort, context)
  }
  onResponseStarted(): void {
    if (!this.#left) this.#inner.onResponseStarted?.()
  }
  onHeaders(status: number, rawHeaders: Buffer[], resume: () => void, statusText: string): boolean {
    return this.#left || this.#inner.onHeaders?.(status, rawHeaders, resume, statusText) !== false
  }
  onData(chunk: Buffer): boolean {
    return this.#left || this.#inner.onData?.(chunk) !== false
  }
  onComplete(trailers: Buffer[] | null): void {
    if (!this.#left) this.#inner.onComplete?.(trailers)
  }
  onError(error: Error): void {
    if (!this.#left) this.#inner.onError?.(error)
  }
  onUpgrade(status: number, rawHeaders: Buffer[] | null, socket: unknown): void {
    this.#inner.onUpgrade?.(status, rawHeaders, socket)
  }
  onBodySent(chunkSize: number, totalBytesSent: number): void {
    this.#inner.onBodySent?.(chunkSize, totalBytesSent)
  }
  onRequestSent(): void {
    this.#inner.onRequestSent?.()
  }
}

/**
 * What a createFetch call is. A class with the URL as a prototype getter
 * (worked out only when an event is published) and `repeatable` as a
 * method: no accessor literal or closure per call.
 */
class FetchCallInit implements OutboundCallInit {
  readonly config: OutboundCallInit['config']
  readonly deadline: Deadline | undefined
  readonly signal: AbortSignal | undefined
  readonly method: string
  readonly retry: OutboundCallInit['retry']
  readonly replayable: boolean
  readonly onAttempt: OutboundCallInit['onAttempt']
  readonly waiting: RetryWaits | undefined
  readonly theirDispatcher: object | undefined
  readonly #target: RequestInfo
  readonly #idempotencyKey: boolean
  #url: string | undefined

  constructor(
    init: Omit<OutboundCallInit, 'url' | 'repeatable' | 'target'> & {
      target: RequestInfo
      headers: unknown
    },
  ) {
    this.config = init.config
    this.deadline = init.deadline
    this.signal = init.signal
    this.method = init.method
    this.retry = init.retry
    this.replayable = init.replayable
    this.onAttempt = init.onAttempt
    this.waiting = init.waiting
    this.theirDispatcher = init.theirDispatcher
    this.#target = init.target
    // Read now, as the call's headers are taken (snapshotInit): a key the
    // caller adds or removes afterwards does not change the retry rules.
    this.#idempotencyKey = hasHeader(init.headers, 'idempotency-key')
  }

  get url(): string {
    const target = this.#target
    this.#url ??= eventUrlOf(target instanceof UndiciRequest ? target.url : target)
    return this.#url
  }

  target(): string {
    const target = this.#target
    return String(target instanceof UndiciRequest ? target.url : target)
  }

  repeatable(): boolean {
    return isRepeatable(this.method, this.#idempotencyKey)
  }
}

/** Origin and path of a fetch input, for events (never the query: it may carry secrets). */
function eventUrlOf(input: RequestInfo | string): string {
  let target: URL
  try {
    target = new URL(String(input))
  } catch {
    // A URL that does not parse (fetch refuses it, naming it): read for the
    // retry-skipped event, this threw ERR_INVALID_URL in place of fetch's
    // "Failed to parse URL from …" whenever someone subscribed.
    // Never its credentials either (`user:pass@`), as a parsed URL's origin has none.
    return unparsedWithoutQuery(String(input))
  }
  return parsedEventUrl(target)
}

/**
 * A response header by name, for the retry decision. A function of its own:
 * a closure in `send` that named `response` would put it in the context every
 * closure of `send` shares, the attempt's abort and finish hooks among them,
 * which the connection holds while the body is open: a Response dropped
 * unread could then never be collected, and undici never cancel its body.
 */
function headerLookup(response: Response): (name: string) => string | null {
  return (name) => response.headers.get(name)
}

/**
 * undici's fetch wraps network errors as `TypeError('fetch failed', { cause })`.
 * Its redirect limit is a network error too, with nothing but the spec's
 * wording to tell it by (no code): it gets our code, so a caller can match it
 * and the retry rules never read it as a network failure.
 */
function unwrap(error: unknown, hops: number): unknown {
  // Only that wrapper: undici's other TypeErrors with a cause carry the
  // message worth keeping ("Failed to parse URL from http://host:80a", whose
  // cause says only "Invalid URL").
  if (!(error instanceof TypeError) || error.message !== 'fetch failed') return error
  if (error.cause === undefined) return error
  const cause = error.cause
  if (cause instanceof Error && cause.message === 'redirect count exceeded') {
    return new TooManyRedirectsError(Math.max(0, hops - 1), cause)
  }
  return cause
}

/** The Content-Type undici's fetch gives a FormData body it extracts (body.js): the form's own, not a caller's. */
const UNDICI_FORM_TYPE = /^multipart\/form-data; boundary=----formdata-undici-0\d{11}$/

/**
 * A redirect hop's dispatch options with the form sent again under a
 * Content-Type that names its boundary. fetch follows a 307/308 by
 * extracting the form again (the fetch spec's redirect step), which draws a
 * new boundary, and keeps the first request's Content-Type, which names the
 * old one (nodejs/undici#4065): the target got a body split on a boundary
 * its Content-Type did not name, a form with no parts. Extracted once more
 * here, by undici's own Response, the type and the body agree: the same
 * parts, streamed (files are not read into memory), of the same length —
 * every undici boundary is as long — so fetch's Content-Length holds; the
 * body fetch extracted for the hop is left unread. A Content-Type of the
 * caller's own is left as given. Redirect hops only: no cost on a call's
 * first request.
 */
function formResent(
  opts: Dispatcher.DispatchOptions,
  form: UndiciFormData,
): Dispatcher.DispatchOptions {
  // fetch hands its header list as a record (HeadersList.entries).
  const headers = opts.headers as Record<string, string> | null | undefined
  if (headers == null || typeof headers !== 'object' || Array.isArray(headers)) return opts
  const name = Object.keys(headers).find((key) => key.toLowerCase() === 'content-type')
  if (name === undefined || !UNDICI_FORM_TYPE.test(String(headers[name]))) return opts
  const fresh = new UndiciResponse(form)
  const type = fresh.headers.get('content-type')
  if (type === null || fresh.body === null) return opts
  return Object.assign({}, opts, {
    headers: Object.assign({}, headers, { [name]: type }),
    body: fresh.body,
  }) as Dispatcher.DispatchOptions
}

/** The call's redirect mode, as fetch reads it: the init's, else an undici Request's own. */
function redirectModeOf(
  init: RequestInit,
  input: RequestInfo,
): NonNullable<RequestInit['redirect']> {
  return init.redirect ?? (input instanceof UndiciRequest ? input.redirect : 'follow')
}

/**
 * The redirect fetch would not follow because the body is a stream: a 301,
 * 302, 307 or 308 with a `Location`, under `redirect: 'follow'`, for a body
 * that cannot be sent again. undici fails it with a bare network error (no
 * message, no code: the fetch spec's step that refuses it gives no reason),
 * so it is told by its circumstances — the last hop's answer and the body —
 * with that empty message as the last check: every other network error
 * undici returns at a redirect (a bad `Location`, a scheme that is not
 * HTTP(S), the redirect limit) has one, and keeps it. Read on failure only.
 */
function refusedRedirect(
  thrown: unknown,
  attempt: Attempt | undefined,
  replayable: boolean,
  init: RequestInit,
  input: RequestInfo,
): RedirectWithStreamBodyError | undefined {
  if (replayable || attempt === undefined) return undefined
  const status = attempt.statusCode
  const location = attempt.location
  if (
    location === undefined ||
    !(status === 301 || status === 302 || status === 307 || status === 308)
  ) {
    return undefined
  }
  if (redirectModeOf(init, input) !== 'follow') return undefined
  if (!(thrown instanceof TypeError) || thrown.message !== 'fetch failed') return undefined
  const cause = thrown.cause
  if (!(cause instanceof Error) || cause.message !== '') return undefined
  return new RedirectWithStreamBodyError(
    attempt.init.url,
    status,
    resolvedLocation(location, attempt),
    cause,
  )
}

/**
 * The redirect `redirect: 'error'` refused: undici's "fetch failed" around a
 * bare `Error('unexpected redirect')`, told by that message (undici's own
 * wording: one reworded is passed on as it is) and the hop's status.
 */
function unexpectedRedirect(
  thrown: unknown,
  attempt: Attempt | undefined,
): UnexpectedRedirectError | undefined {
  if (attempt?.statusCode === undefined) return undefined
  if (!(thrown instanceof TypeError) || thrown.message !== 'fetch failed') return undefined
  const cause = thrown.cause
  if (!(cause instanceof Error) || cause.message !== 'unexpected redirect') return undefined
  const location = attempt.location
  const target = location === undefined ? undefined : resolvedLocation(location, attempt)
  return new UnexpectedRedirectError(attempt.init.url, attempt.statusCode, target, cause)
}

/**
 * A redirect's `Location`, resolved against the URL that answered it — the
 * whole URL: the event URL has its path parameters cut, and a relative
 * `next` from `/a;s=1/b` is `/a;s=1/next` — as the server sent it when it
 * does not parse (undici parses it before it follows or refuses a redirect,
 * so such a Location fails earlier, with its own message).
 */
function resolvedLocation(location: string, attempt: Attempt): string {
  try {
    return new URL(location, attempt.init.target?.() ?? attempt.init.url).href
  } catch {
    return location
  }
}

/**
 * undici's messages for a URL fetch refuses before it sends anything (the
 * fetch spec's port blocking and scheme fetch; a redirect's Location is
 * checked the same way): bare `Error`s, no code. A message not listed here
 * (undici reworded it) is passed on as it is.
 */
const REFUSALS: ReadonlyMap<string, UrlRefusal> = new Map([
  ['bad port', 'bad-port'],
  ['unknown scheme', 'unsupported-scheme'],
  ['not implemented... yet...', 'unsupported-scheme'], // file:
  ['about scheme is not supported', 'unsupported-scheme'],
  ['URL scheme must be a HTTP(S) scheme', 'unsupported-scheme'], // a redirect's Location
])

/**
 * undici's messages for a redirect's Location with a user name or password
 * (the fetch spec's redirect steps 9 and 10: a cross-origin one, any one):
 * bare `Error`s, passed on with no code — retry-skipped said
 * `after-first-byte` when the redirect had a body. Read only after a hop
 * answered with a Location.
 */
const REDIRECT_REFUSALS: ReadonlyMap<string, UrlRefusal> = new Map([
  ['cross origin not allowed for request mode "cors"', 'credentials'],
  ['URL cannot contain credentials for request mode "cors"', 'credentials'],
])

/** The start of undici's TypeError for a caller's URL that does not parse. */
const UNPARSED_URL = 'Failed to parse URL from '

/**
 * The caller's URL that does not parse (one built from a setting left
 * unset: `https://proxy:${PASS}@host:${PORT}/…?key=${KEY}`): undici's
 * TypeError named it whole, password and query, in its message and its
 * enumerable `input`, which every logger prints, where a URL that parses is
 * never shown so (a bad port's refusal leaves the query out, a password is
 * refused without repeating it). Still a TypeError, as fetch's own, the URL
 * shown as the events show it (`eventUrlOf`), undici's error not kept as
 * its cause; one with neither query nor credentials is left as undici made it.
 */
function unparsedUrl(thrown: unknown, input: RequestInfo): TypeError | undefined {
  if (!(thrown instanceof TypeError) || typeof input !== 'string') return undefined
  if (!thrown.message.startsWith(UNPARSED_URL)) return undefined
  const shown = eventUrlOf(input)
  if (shown === input) return undefined
  return Object.assign(
    new TypeError(
      `${UNPARSED_URL}${shown} (shown without its query, fragment, path parameters or credentials)`,
    ),
    { code: 'ERR_INVALID_URL' },
  )
}

/** The start of undici's (the fetch spec's) refusal of a URL that includes credentials. */
const CREDENTIALS_REFUSAL = 'Request cannot be constructed from a URL that includes credentials'

/** undici's messages for a `blob:` URL it would not fetch: a refusal only for that scheme (`blobRefusal`). */
const BLOB_REFUSALS: ReadonlySet<string> = new Set([
  'invalid method',
  'NetworkError when attempting to fetch resource.',
])

/**
 * A URL fetch refused without sending anything to it (a blocked port, a
 * scheme it does not fetch, a `blob:` URL with no Blob behind it or asked
 * for with another method than GET — undici's "invalid method" for both,
 * bare, which createFetch passed on as it was), as `UrlRefusedError`. After a redirect
 * (`attempt`, the hop that answered it, has a `Location`) it is that
 * Location that was refused; else the caller's URL.
 */
function refusedUrl(
  thrown: unknown,
  attempt: Attempt | undefined,
  input: RequestInfo,
  method: string,
): UrlRefusedError | undefined {
  // A URL with `user:pass@`: undici's TypeError named the whole URL, the
  // password and the query with it, in a message that is logged. Refused
  // here with neither, and without that TypeError as its cause.
  if (thrown instanceof TypeError && thrown.message.startsWith(CREDENTIALS_REFUSAL)) {
    const given = String(input instanceof UndiciRequest ? input.url : input)
    return new UrlRefusedError('credentials', eventUrlOf(given), false, undefined)
  }
  if (!(thrown instanceof TypeError) || thrown.message !== 'fetch failed') return undefined
  const cause = thrown.cause
  const unparsed = unparsedLocation(cause, attempt)
  if (unparsed !== undefined) return unparsed
  if (!(cause instanceof Error) || (cause as { code?: unknown }).code !== undefined)
    return undefined
  const location = attempt?.location
  const redirect = attempt !== undefined && location !== undefined
  const reason =
    REFUSALS.get(cause.message) ?? (redirect ? REDIRECT_REFUSALS.get(cause.message) : undefined)
  if (reason === undefined && !BLOB_REFUSALS.has(cause.message)) return undefined
  let url = redirect ? location : String(input instanceof UndiciRequest ? input.url : input)
  let parsed: URL | undefined
  try {
    parsed = redirect ? new URL(location, attempt.init.url) : new URL(url)
    // Never the query (a message is logged).
    url = parsedEventUrl(parsed)
  } catch {
    url = url.split(/[?#]/)[0] as string
  }
  const why = reason ?? blobRefusal(parsed, cause.message, method)
  return why === undefined ? undefined : new UrlRefusedError(why, url, redirect, cause)
}

/**
 * A redirect whose `Location` does not parse as a URL (a server that built
 * it from a setting left unset: `https://host:undefined/cb?sig=…`): fetch
 * fails it with Node's `TypeError: Invalid URL` (`ERR_INVALID_URL`), passed
 * on as it was — read as if the caller's own URL were wrong, and with the
 * whole Location, query and credentials, in its enumerable `input`, which
 * every logger prints. Refused as the redirect's target, shown without its
 * query, and without that TypeError as its cause (as for credentials).
 */
function unparsedLocation(
  cause: unknown,
  attempt: Attempt | undefined,
): UrlRefusedError | undefined {
  const location = attempt?.location
  if (!(cause instanceof TypeError) || location === undefined) return undefined
  const code = (cause as { code?: unknown }).code
  if (code === 'ERR_INVALID_URL') {
    // Told by what failed to parse, as undici read it, not by the Location
    // as our handler read it, which may parse where undici's does not
    // (latin1 bytes, which undici decodes again as UTF-8; two Location
    // headers, which it joins with ", "). Between a 3xx's headers and the
    // next hop's dispatch, the Location is the one URL fetch parses (the
    // others are URLs already). Shown as our handler read it, the first
    // header: headers joined by undici, cut part by part, showed a password
    // holding ", " in one of them.
    if (typeof (cause as { input?: unknown }).input !== 'string') return undefined
    return new UrlRefusedError('invalid-location', unparsedWithoutQuery(location), true, undefined)
  }
  // A Location with a space or tab at its start or end (Node's http server
  // sends one as given): no valid header value to undici, which never parses
  // it and fails setting `.hash` on the string — a bare TypeError, no code,
  // the whole Location, password and query, in its message. Told by that
  // message, or by the blank (the message is V8's wording).
  if (
    code === undefined &&
    (cause.message.startsWith(HASH_ON_STRING) || OUTER_BLANK.test(location))
  ) {
    return new UrlRefusedError('invalid-location', unparsedWithoutQuery(location), true, undefined)
  }
  return undefined
}

/** V8's message for a property set on a string in strict mode, as undici sets `.hash` on a Location it kept as text. */
const HASH_ON_STRING = "Cannot create property 'hash' on string"

/** A space or tab at the start or end: what makes a header value no valid one to undici (Node's parser lets no NUL, CR or LF through). */
const OUTER_BLANK = /^[ \t]|[ \t]$/

/**
 * Why undici refused a `blob:` URL it fetches otherwise: its "invalid
 * method" says so for a revoked or unknown URL fetched with GET too, and
 * a URL with a query (Node's `resolveObjectURL` does not ignore one) gets a
 * browser's generic "NetworkError when attempting to fetch resource."
 */
function blobRefusal(
  url: URL | undefined,
  message: string,
  method: string,
): UrlRefusal | undefined {
  if (url?.protocol !== 'blob:') return undefined
  // "invalid method" for another method than GET only when a Blob is there:
  // a revoked URL asked for with POST is not found — "GET only" sent the
  // caller to a GET that was refused again.
  return method !== 'GET' &&
    message === 'invalid method' &&
    resolveObjectURL(url.href) !== undefined
    ? 'blob-method'
    : 'blob-not-found'
}
