import {
  ClientClosedError,
  type Clock,
  DEADLINE_EXPIRED_HEADER,
  Deadline,
  defaultReserveMs,
  isDeadlineExceeded,
  runWithDeadline,
  wait,
} from '@hourglass/core'
import { closeIfOrphaned } from '@hourglass/express'
import type { RequestHandler, Response } from 'express'
import type { GatewayConfig } from '../config/gatewayConfigSchema.js'
import type { Log } from '../log/createLog.js'
import type { GatewayMetrics } from '../metrics/GatewayMetrics.js'
import { clientRetryCount, clientTimeouts } from './clientHeaders.js'
import { closeAfterAnswer } from './closeAfterAnswer.js'
import { GatewayShutdownError } from './GatewayShutdownError.js'
import { lostInTransit } from './lostInTransit.js'
import { loggedPathOf, pathOf } from './pathOf.js'
import { bodyStillOwed } from './readBody.js'
import {
  attachScope,
  REQUEST_ID_HEADER,
  type RequestScope,
  requestIdFrom,
  runInRequest,
  scopeOf,
} from './requestScope.js'
import { sendJson } from './sendJson.js'

/**
 * The API's paths, as the router matches them: an Express router ignores
 * case by default (`/V1/chat/completions` is served), so a request it serves
 * is counted, and refused in a drain, whatever its case. `test` allocates
 * nothing (no lower-cased copy of every path).
 */
const API_PATH = /^\/v1\//i

/** After a drain times out, how long cancelled requests get to write their 503 before their sockets are cut. */
const CUT_GRACE_MS = 1000

export interface DrainReport {
  /**
   * API requests (`/v1/…`) in flight when the drain began. Probes and
   * scrapes (`/healthz`, `/readyz`, `/metrics`, and under `startGateway` a
   * 404 such as `/favicon.ico`) are neither counted nor waited for.
   */
  inFlight: number
  /** …that finished on their own. */
  drained: number
  /** …still running at the drain timeout: cancelled (503 `shutting_down`), then cut. */
  cutOff: number
  /** How long the drain took, in ms. */
  ms: number
}

interface TrackerOptions {
  owner: object
  config: GatewayConfig
  clock: Clock
  metrics: GatewayMetrics
  log: Log
  trustStainlessTimeout: boolean
}

/**
 * Every request of one gateway from arrival to the end of its response: its
 * id, its scope (read by logs, metrics and the retry gate), its own deadline
 * (the ingress one) with the client SDK's timeout under it (`answerBy`:
 * `x-stainless-timeout`, `x-stainless-read-timeout`), and the in-flight set
 * a shutdown drains.
 */
export class RequestTracker {
  readonly #o: TrackerOptions
  readonly #open = new Map<Response, RequestScope>()
  /**
   * How many of `#open` are API requests: what a drain counts and waits for.
   * A probe in flight (`/readyz` waiting on a slow Redis, up to 500 ms) or a
   * scrape held the drain, and was reported as a request drained or cut:
   * `drained 3` with one API request, a probe cut making the CLI exit 3.
   */
  #openApi = 0
  /** The API requests among `#open`: a drain judges only these cut or not. */
  readonly #apiOpen = new WeakSet<Response>()
  #draining = false
  #onIdle: (() => void) | undefined

  constructor(options: TrackerOptions) {
    this.#o = options
  }

  get draining(): boolean {
    return this.#draining
  }

  /**
   * The first middleware: `x-request-id` accepted (1–128 visible ASCII
   * characters) or generated, set on the response before anything can answer
   * it; a scope for the request; 503 `shutting_down` for API calls arriving
   * during a drain (logged and counted, not waited for); the request's
   * metrics when its response ends. A request whose body will not be read
   * to its end gets the last answer on its connection (`closeAfterAnswer`).
   */
  arrive(): RequestHandler {
    const { owner, clock, metrics, log } = this.#o
    return (req, res, next) => {
      const scope: RequestScope = {
        id: requestIdFrom(req.headers[REQUEST_ID_HEADER]),
        owner,
        startedAt: clock.now(),
        clientRetry: clientRetryCount(req.headers['x-stainless-retry-count']),
        retryCharge: undefined,
        deadline: undefined,
        errorCode: undefined,
      }
      res.setHeader(REQUEST_ID_HEADER, scope.id)
      const api = API_PATH.test(pathOf(req))
      if (this.#draining && api) {
        scope.errorCode = 'shutting_down'
        res.once('close', () => countRequest(metrics, clock, res, scope))
        // A body may still be on its way: closed without losing the 503.
        closeAfterAnswer(res)
        res.setHeader('x-should-retry', 'true')
        res.setHeader('retry-after', '1')
        sendJson(res, 503, {
          error: {
            message: 'the gateway is shutting down; retry (another instance can serve it)',
            type: 'server_error',
            param: null,
            code: 'shutting_down',
          },
        })
        // The same line the API handlers write for each request they answer.
        log('warn', 'request', {
          requestId: scope.id,
          path: loggedPathOf(req),
          status: 503,
          error: scope.errorCode,
          latencyMs: Math.round(clock.now() - scope.startedAt),
        })
        return
      }
      // In a drain every answer closes its connection: a client told
      // keep-alive reuses the socket right after, and the drain's end
      // (`closeAllConnections`) resets it under that next request. Outside
      // one, only POST /v1/chat/completions reads a body: any other
      // request's (a GET with one, a POST to no route) is never read, and
      // Node would read and drop it, however long it runs, after the answer.
      if (this.#draining || (req.method !== 'POST' && bodyStillOwed(req))) {
        closeAfterAnswer(res)
      }
      attachScope(req, scope)
      attachScope(res, scope)
      this.#open.set(res, scope)
      if (api) {
        this.#openApi++
        this.#apiOpen.add(res)
      }
      res.once('close', () => {
        // Answered with its body still coming, by what had no reason to say
        // `connection: close` (anything answering before the body read that
        // did not; the deadline's 504s do, see createGateway's `respond`):
        // Node kept the connection and reads on what comes. Closed now,
        // lingering. A body that came whole in the meantime (a small one, in
        // the packet with the headers) leaves it open.
        if (!req.complete && res.writableFinished) closeAfterAnswer(res)
        this.#open.delete(res)
        if (api) this.#openApi--
        // Gone before the end: stop everything done for it (this listener may
        // run before the ingress middleware's, and disposing first would unlink
        // the request's deadline from the cancel that one sends).
        if (!res.writableFinished) scope.deadline?.cancel(new ClientClosedError())
        else scope.deadline?.dispose()
        scope.answerBy?.dispose()
        if (api) {
          countRequest(metrics, clock, res, scope)
          if (this.#openApi === 0) this.#onIdle?.()
        }
      })
      // Pipelined behind an answer still being written: its client leaving
      // must reach the 'close' above too (with or without deadline()
      // mounted). After it is listened to: a connection already gone closes
      // the response at once.
      closeIfOrphaned(req, res)
      runInRequest(scope, next)
    }
  }

  /**
   * After the ingress `deadline()`: the request's own deadline under it,
   * and, when the client SDK sent its timeout (clamped to `deadline.maxMs`,
   * less the ingress reserve), `answerBy` under that: the handler answers by
   * then — a whole non-streamed answer, a stream's first token — so the
   * gateway never works for a client that has given up (its timer ends at
   * the response's headers). openai-node's `x-stainless-timeout` counts
   * from here (its timer runs from before it sends); openai-python's
   * `x-stainless-read-timeout` from the end of the body (`reenter`): httpx
   * uploads under its write timeout and starts the read one after. It can
   * only shorten: what a client claims must not buy more than
   * `deadline.defaultMs`. Without an ingress deadline, `deadline.defaultMs`.
   * openai-node 6.x sends its header only for a per-request `timeout`
   * (`create(body, { timeout })`, whole seconds, truncated); neither its
   * 600 s default nor a `timeout` given to the client (constructor or
   * `withOptions`) is sent, and then the client's hang-up is what stops the
   * work. openai-python sends its own on every request.
   */
  scopeDeadline(): RequestHandler {
    const { config, clock, trustStainlessTimeout } = this.#o
    return (req, _res, next) => {
      const scope = scopeOf(req)
      if (scope === undefined) return next()
      const parent = (req as { deadline?: Deadline }).deadline
      const own =
        parent === undefined ? Deadline.after(config.deadline.defaultMs, { clock }) : parent.child()
      // Not the request's deadline itself: the SDK's timer stops at the
      // response's headers, so a stream that has started is read to its end
      // however long it runs. Narrowing the whole request cut such a stream
      // at the timeout (`timeout: 30_000`, a 40 s answer: a deadline error
      // at 30 s, where the provider alone streams it whole).
      if (trustStainlessTimeout) {
        const client = clientTimeouts(req.headers, config.deadline.maxMs)
        if (client.fromHeadMs !== undefined) {
          scope.answerBy = own.child(Math.max(0, client.fromHeadMs - this.#reserveMs()))
        }
        scope.readTimeoutMs = client.afterBodyMs
      }
      scope.deadline = own
      req.deadline = own
      runWithDeadline(own, next)
    }
  }

  /**
   * Back into the request's scope and deadline (after a body parser, which
   * may lose async context). The body is read whole by then: openai-python's
   * read timeout starts now, and `answerBy` becomes the sooner of what it
   * was and that timeout from now. From the head, a 30 KB body uploaded
   * over 1.5 s under `timeout=2` got a 504 0.5 s after it, the client
   * waiting for its answer still.
   */
  reenter(): RequestHandler {
    return (req, res, next) => {
      const scope = scopeOf(req)
      if (scope === undefined) return next()
      this.#readTimeoutFromNow(scope, res)
      const run = () => runInRequest(scope, next)
      if (scope.deadline === undefined) run()
      else runWithDeadline(scope.deadline, run)
    }
  }

  /** `answerBy` narrowed by openai-python's read timeout, counted from now; once. */
  #readTimeoutFromNow(scope: RequestScope, res: Response): void {
    const readMs = scope.readTimeoutMs
    scope.readTimeoutMs = undefined
    // Its response closed already: the request's end has disposed `answerBy`
    // and would never dispose a new one.
    if (readMs === undefined || scope.deadline === undefined || !this.#open.has(res)) return
    const byRead = scope.deadline.child(Math.max(0, readMs - this.#reserveMs()))
    const kept = scope.answerBy
    if (kept !== undefined && kept.remaining() <= byRead.remaining()) {
      byRead.dispose()
      return
    }
    kept?.dispose()
    scope.answerBy = byRead
  }

  /** The ingress reserve, kept back from the client's timeout so the gateway's 504 reaches it first. */
  #reserveMs(): number {
    const { config, clock } = this.#o
    return config.deadline.reserveMs ?? defaultReserveMs(clock)
  }

  /**
   * Stop taking API requests (503 `shutting_down`, `/readyz` 503) and wait up
   * to `timeoutMs` for those in flight to finish. The ones still running are
   * then cancelled (their deadline's reason says shutdown: they answer 503,
   * streams end with an error event) and, after a short grace, cut. A probe
   * or scrape in flight is not waited for, nor counted: it answers meanwhile
   * or is closed with the rest (cut here with the API requests, or by the
   * server's close, `startGateway`'s, after the drain). Every
   * answer from now on is the last on its connection: it says `connection:
   * close`, or, a stream whose headers went out before, has its connection
   * closed when it ends.
   */
  async drain(timeoutMs: number): Promise<DrainReport> {
    this.#draining = true
    // Those in flight too: the connection closes after their answer, not
    // under the client's next request — said in their headers, or, for a
    // stream whose headers said keep-alive before the drain, done when it ends.
    // The last open answer on each connection closes it (they are in
    // arrival order): the first of a pipelined pair closing it dropped the
    // answer queued behind it — written, logged 200, counted drained, never
    // delivered.
    const lastOnConnection = new Map<unknown, Response>()
    for (const res of this.#open.keys()) lastOnConnection.set(res.req.socket ?? res, res)
    for (const res of lastOnConnection.values()) closeAfterAnswer(res)
    const started = performance.now()
    const inFlight = this.#openApi
    await this.#idle(timeoutMs)
    let cutOff = 0
    if (this.#openApi > 0) {
      // Still open at the timeout is not cut: one whose answer was in hand
      // (the model's answer read, its response being written, a stream's
      // last chunk going out) is past what the cancel reaches, and finishes
      // whole in the grace. Cut: answered or ended by the shutdown
      // (`shutting_down`), or not delivered whole (destroyed below, lost in
      // transit). Counted cut, a whole 200 made the CLI exit 3.
      const atTimeout = [...this.#open].filter(([res]) => this.#apiOpen.has(res))
      const reason = new GatewayShutdownError()
      for (const scope of this.#open.values()) scope.deadline?.cancel(reason)
      await this.#idle(CUT_GRACE_MS)
      for (const res of this.#open.keys()) res.destroy()
      cutOff = atTimeout.filter(
        ([res, scope]) =>
          scope.errorCode === 'shutting_down' || !res.writableFinished || lostInTransit(res),
      ).length
    }
    return {
      inFlight,
      drained: inFlight - cutOff,
      cutOff,
      ms: Math.round(performance.now() - started),
    }
  }

  /** Resolves when no API request is open, or after `ms` (core's wait, woken by the last one's close). */
  async #idle(ms: number): Promise<void> {
    if (this.#openApi === 0 || ms <= 0) return
    await wait(ms, {
      wakeOn: (wake) => {
        this.#onIdle = wake
        return () => {
          this.#onIdle = undefined
        }
      },
    })
  }
}

/** An API request's response closed: its status (499 when the client left first), error code and duration. */
function countRequest(metrics: GatewayMetrics, clock: Clock, res: Response, scope: RequestScope) {
  // Closed unfinished after the request's deadline ran out: the deadline's
  // doing, not the client's — the ingress middleware's backstop can close a
  // stream (or end it short) before the handler has noted its cut; a client
  // that leaves ends the deadline with `ClientClosedError` instead.
  // A whole answer that reached the client is none (it waited its turn
  // behind another on a pipelined connection past its deadline).
  // Ended whole, but its client reset the connection before taking it all:
  // Node said 'finish' anyway.
  const delivered = res.writableFinished && !lostInTransit(res)
  const expired =
    isDeadlineExceeded(scope.deadline?.reason) && !(scope.answered === true && delivered)
  const status = delivered || scope.cut === true || expired ? res.statusCode : 499
  if (expired) scope.errorCode ??= 'deadline_exceeded'
  metrics.request(status, errorCodeOf(res, status, scope), clock.now() - scope.startedAt)
}

/** What to count a finished response as: the code the client was told, or what its status says. */
function errorCodeOf(res: Response, status: number, scope: RequestScope): string | undefined {
  if (status === 499) return 'client_closed'
  if (scope.errorCode !== undefined) return scope.errorCode
  if (status < 400) return undefined
  // The ingress middleware's own 504 (the handler did not answer in time).
  if (res.getHeader(DEADLINE_EXPIRED_HEADER) !== undefined) return 'deadline_exceeded'
  return `http_${status}`
}
