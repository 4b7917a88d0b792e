import type { IncomingMessage, ServerResponse } from 'node:http'
import {
  aggregateEndedBy,
  type Deadline,
  endedBy,
  fieldOf,
  isAbortError,
  isClientClosed,
  isDeadlineExceeded,
  isExpiryOf,
  isForeignExpiry,
} from '@hourglass/core'
import type { ErrorRequestHandler } from 'express'
import { clientLeft } from './clientLeft.js'
import { destroyIfEndStalls } from './destroyIfEndStalls.js'
import { fromItsTurn } from './fromItsTurn.js'
import { IngressRequest } from './IngressRequest.js'
import { writeExpired } from './writeExpired.js'

/**
 * Express error handler (4 arguments; put it after your routes): maps the
 * deadline's errors to responses and passes every other error on.
 *
 * - `DeadlineExceededError` (a slice ran out, or the request did): 504 with
 *   the same JSON body and `x-deadline-expired: 1` as the middleware; a
 *   response already streaming is ended (destroyed if that end has not
 *   left a grace later: its client stopped reading). Only the request
 *   deadline's own line's (see core's `isExpiryOf`): one of a deadline of the app's own (a
 *   `Deadline.after(20)` cap on a lookup, not handled) is passed on, as any
 *   error of the app's — answered as the request's expiry it was a 504 that
 *   said the request had run out with most of its time left, and an expire
 *   event, a metric, for an expiry that never came.
 * - This request's `ClientClosedError` (its deadline's reason, or any once
 *   its client left): nothing — nobody is left to answer. Another
 *   request's, from work the two shared, is passed on: this request's
 *   caller is still there, waiting for an answer.
 * - An abort or deadline error that arrives after the deadline already
 *   answered for the request: swallowed; it is the handler noticing. So is
 *   the "headers already sent" a file send still looking up its file
 *   (`res.sendFile`, `express.static`) fails with on finding the 504.
 * - An error whose `cause` (or its cause's, …) is one of those two: judged
 *   as that cause. Node's own APIs wrap the signal's reason in an
 *   `AbortError` so, and `@hourglass/llm` a streamed answer cut by its
 *   deadline in a `StreamInterruptedError`.
 * - An AggregateError (`Promise.any` over hedged calls): judged as the one
 *   error that ended all its errors, when there is one; swallowed after the
 *   deadline answered or the client left when each of its errors would be.
 * - body-parser's "request aborted" for this request's upload (the client
 *   left mid-upload), or Node's own `aborted` (ECONNRESET) that a route
 *   reading the upload itself gets for it: as its `ClientClosedError`.
 * - Node's `ERR_STREAM_PREMATURE_CLOSE` for a request whose client left or
 *   whose deadline answered: what `pipeline(source, res)` rejects with when
 *   the response closes under it. Swallowed. So is Express's "Request
 *   aborted" (`ECONNABORTED`) that `res.sendFile`/`res.download` hand their
 *   callback for such a response. So is the work stopped when the
 *   server cut the response itself without an error (`res.destroy()`,
 *   `closeAllConnections()`): its deadline was cancelled with that premature
 *   close.
 *
 * Bodies never carry an error's message or stack.
 */
export function deadlineErrors(...misuse: never[]): ErrorRequestHandler {
  // `app.use(deadlineErrors)`: the factory mounted, not its handler (as
  // `app.use(cors)` for `cors()`). Of no parameters, it is a RequestHandler
  // to TypeScript and a plain middleware to Express, which then never gave
  // it an error (a slice's expiry went to the final handler as a 500) and
  // called it, with the request, for every request that got past the
  // routes: each got a handler back and no answer — a 404 hung for good, or
  // until deadline()'s 504 a whole budget later. Thrown from there, Express
  // passes it on as that request's error: the first 404 names the mistake.
  // Told by Express's `next` in third place: other arguments stay ignored.
  // (`never[]`: TypeScript now refuses the factory where a handler goes.)
  if (typeof (misuse as unknown[])[2] === 'function') {
    throw new TypeError(
      'deadlineErrors is called as a middleware: mount the error handler it makes, app.use(deadlineErrors())',
    )
  }
  return function hourglassDeadlineErrors(error, req, res, next): void {
    const ingress = IngressRequest.of(req)
    const reason = endedBy(error) ?? aggregateEndedBy(error, ingress?.deadline) ?? error
    const deadlineError = isDeadlineExceeded(reason)
    // Only this request's own departure: nobody is left to answer it. One
    // of another request's (an upstream call shared by two requests, made
    // under the deadline of the one whose client left) is an error of the
    // app's like any other. Swallowed, it left the caller still connected
    // waiting out its budget for a 504 that said not to retry — in observe
    // mode, or without deadline(), for no answer at all.
    if (isClientClosed(reason) && ownDeparture(req, res, ingress, reason)) return
    if (isUploadAborted(error) && uploadCut(req)) return
    // Hedged calls (`Promise.any` over two providers, each given the
    // request's signal) reject with an AggregateError of their aborts: each
    // one alone is swallowed below, the aggregate was passed on, and the
    // app's error handler logged a stack for every 504 such a route got.
    // Swallowed only when every member would be on its own.
    if (
      ingress &&
      (ingress.answered || ingress.clientClosed) &&
      everyEnded(error, ingress.answered)
    ) {
      return
    }
    // An abort that carries no reason (the OpenAI and Anthropic SDKs'
    // APIUserAbortError, axios's CanceledError drop the signal's) once this
    // request's client has left: its deadline was cancelled then, and nobody
    // is left to answer — as after the 504 (below). Passed on, the app's error
    // handler logged "Request was aborted." for every client that hung up.
    // One with a cause of the app's (its own controller aborted with an
    // error) is a failure of the app's, passed on.
    if (ingress?.clientClosed && isAbortError(error) && fieldOf(error, 'cause') === undefined)
      return
    // A stream into a response that is over (the caller left, or the
    // deadline ended it) fails with Node's premature close: `pipeline`
    // rejects with it when the response closes under it. Nobody to tell.
    if (ingress && (ingress.clientClosed || ingress.answered) && isPrematureClose(error)) return
    // A file send (`res.sendFile`, `res.download`) whose response the
    // deadline ended or cut, or whose client left, hands its callback
    // Express's "Request aborted": Express drops it when given no callback,
    // but the callback Express's docs show passes it on, and the app's error
    // handler logged it for every download a deadline cut or a client left.
    // A client's reset reaches the send (the socket's 'error') before the
    // response's 'close' tells us: read from the socket then (`clientLeft`).
    if (ingress && isSendAborted(error) && (ingress.answered || ingress.over || clientLeft(req))) {
      return
    }
    // The server cut the response itself (`res.destroy()`, a shutdown's
    // `closeAllConnections()`, a server timeout): the work that cut stopped
    // (its deadline was cancelled with it) has nobody to answer, and is no
    // error of the app's — passed on, the final handler logged a stack per
    // request in flight at every shutdown.
    if (ingress?.cut && (reason === ingress.deadline.reason || isPrematureClose(error))) return
    if (ingress?.answered) {
      if (deadlineError || isAbortError(error) || isHeadersSent(error)) return
      if (isDroppedBodyRead(error, req)) return
      next(error)
      return
    }
    if (!deadlineError) {
      next(error)
      return
    }
    // The response is over (the client left, the server cut it, or it was
    // answered in full): nobody to answer, nothing to report as an expiry.
    if (ingress?.over) return
    // Not the request's expiry: one of an unrelated deadline of the app's,
    // or, whatever the line, one marked as from elsewhere (a remote's own
    // cap, a job's). Without deadline() there is no line to ask about, but
    // such a mark still tells: answered, it was a 504 `x-deadline-expired`
    // (do not retry) with the request's time left.
    if (ingress ? !isExpiryOf(reason, ingress.deadline) : isForeignExpiry(reason)) {
      next(error)
      return
    }
    if (ingress && !ingress.observe) {
      ingress.expire('handler', reason.slice)
      return
    }
    // deadline() is not in the chain, or only observes (the error is real
    // nonetheless: something downstream ran out): answer from what it knows.
    // Nothing of deadline()'s bounds the end given here (it answers only
    // when it enforces, above): a started stream ended now whose client
    // stopped reading with less than the high-water mark waiting (an SSE
    // feed of small events) never flushed its end, and the socket stayed
    // open for good. Bounded as deadline() bounds its own: from its turn
    // when queued behind another pipelined answer (a destroy while it
    // waits took the shared connection; left unbounded, it was held for
    // good once its turn came). Not a response the app had ended already
    // (its answer, still flushing, is its own).
    const endedBefore = res.writableEnded
    // Under an observing deadline(), a response that wrote all the length it
    // declared is ended, not destroyed (see `wholeBodyGiven`).
    // Under an observing deadline() whose budget is a cap of the server's
    // own, the answer does not say the caller's is gone (see `markNoRetry`).
    const write = () =>
      writeExpired(res, req.method, reason, ingress?.givenBefore, ingress?.callersBudget ?? true)
    // Under an observing deadline() the answer is recorded as enforce mode
    // records it (outcome `expired`, the expire event): see `answerObserved`.
    // Not by a deadline() of an older installed copy (requests are shared
    // across copies: a `Symbol.for` key), which has no such method: called,
    // its TypeError made the 504 a 500. Answered as that copy answered it.
    const action =
      typeof ingress?.answerObserved === 'function'
        ? ingress.answerObserved(write, reason.slice)
        : write()
    if (action === 'ended' && !endedBefore) {
      fromItsTurn(res, () => destroyIfEndStalls(res), 'finish')
    } else if (action === '504') {
      // Its `end` reached a middleware that completes it later
      // (express-session saving to its store): bounded the same, from its
      // turn (queued behind a pipelined answer, it waits for its socket),
      // or a store that never answered held the 504 for good.
      fromItsTurn(res, () => destroyIfEndStalls(res))
    }
  }
}

/**
 * A `ClientClosedError` that is this request's: the reason its deadline (or
 * one the handler put in its place under it) was cancelled with, or any
 * once its client left (nobody to answer either way). Without deadline()
 * nothing says whose it is but the response: one whose connection is gone
 * has nobody to answer.
 */
function ownDeparture(
  req: IncomingMessage,
  res: ServerResponse,
  ingress: IngressRequest | undefined,
  reason: unknown,
): boolean {
  if (ingress === undefined) return res.destroyed === true || connectionGone(req)
  if (ingress.clientClosed || ingress.deadline.reason === reason) return true
  // `IngressRequest.of` walked these parents up to ours already; a reason
  // getter that throws (not a core Deadline) tells nothing.
  try {
    let deadline = (req as { deadline?: unknown }).deadline as Deadline | undefined
    while (deadline !== undefined && deadline !== ingress.deadline) {
      if (deadline.reason === reason) return true
      deadline = deadline.parent
    }
  } catch {}
  return false
}

/**
 * An AggregateError (`Promise.any`'s) whose every error is the handler
 * noticing the end of its request: after the deadline answered, a deadline
 * error or an abort (the rule for one alone); after the client left, an
 * error the departure or a deadline ended. Never throws: a hostile
 * `errors` tells nothing.
 */
function everyEnded(error: unknown, answered: boolean): boolean {
  try {
    if (!(error instanceof AggregateError)) return false
    const errors: unknown = error.errors
    return (
      Array.isArray(errors) &&
      errors.length > 0 &&
      errors.every((member: unknown) => {
        const reason = endedBy(member)
        if (answered) return isDeadlineExceeded(reason ?? member) || isAbortError(member)
        return reason !== undefined
      })
    )
  } catch {
    return false
  }
}

/**
 * This request's body was cut before its end: the client left mid-upload.
 * body-parser's error is raised from the request's 'aborted' event, once
 * Node destroyed it (`readableAborted`); HTTP/2's request says `aborted`.
 */
function uploadCut(req: IncomingMessage): boolean {
  return req.readableAborted === true || req.aborted === true
}

/** The client's connection is closed or half-closed (HTTP/1; HTTP/2's socket is the session's). */
function connectionGone(req: IncomingMessage): boolean {
  if (req.httpVersionMajor >= 2) return false
  const socket = req.socket as { destroyed?: boolean; writable?: boolean } | null | undefined
  return socket?.destroyed === true || socket?.writable === false
}

/**
 * body-parser's (raw-body's) error for a client that left mid-upload. It is
 * raised from the request's 'aborted' event, before the response's 'close':
 * passed on, the user's handlers wrote a 500 for nobody (and logged a
 * stack), and that 500's 'finish' ended the request as `ok`, its deadline
 * never cancelled. Left unanswered, the 'close' that follows reports the
 * departure and cancels the deadline with `ClientClosedError`.
 */
function isUploadAborted(error: unknown): boolean {
  if (field(error, 'type') === 'request.aborted') return true
  // Node's own for the same departure, to a route that reads its upload
  // itself (`pipeline(req, file)`, `for await (… of req)`): the request
  // destroyed with `ConnResetException('aborted')` (code ECONNRESET, no
  // `syscall`: no OS error). Passed on, it was the same 500 for nobody.
  return (
    field(error, 'code') === 'ECONNRESET' &&
    field(error, 'message') === 'aborted' &&
    field(error, 'syscall') === undefined
  )
}

/**
 * A file send (`res.sendFile`, `res.download`, `express.static`: the `send`
 * package) that was looking up its file when the deadline answered finds
 * the headers sent when the lookup returns, and fails with this (a 500,
 * `expose: false`; Node's own `ERR_HTTP_HEADERS_SENT` for code that wrote
 * past the swallowed writers). Passed on, the app's error handler logged a
 * "Can't set headers after they are sent" bug for every such 504, one the
 * deadline caused, not the app.
 */
function isHeadersSent(error: unknown): boolean {
  return (
    field(error, 'code') === 'ERR_HTTP_HEADERS_SENT' ||
    field(error, 'message') === "Can't set headers after they are sent."
  )
}

/**
 * body-parser's errors (`express.json()` and its siblings, both majors) for
 * a body Node had thrown away. A layer ahead of the parser (an auth lookup,
 * a session store) outlasted the deadline; once the 504 was out, Node
 * drained the body nobody was reading (`_dump`: what had arrived, and what
 * arrives after, goes to no listener), and that layer's late `next()` then
 * ran the parser on what was left of it: "stream is not readable" for a
 * body already drained (body-parser 1, Express 4's), "request size did not
 * match content length" for one still arriving, or a parse or verify
 * failure of its tail. Passed on, the app's error handler logged a 500 or a
 * 400 for every such 504: the deadline's doing, not the client's or the app's.
 */
const DROPPED_BODY_ERRORS: ReadonlySet<unknown> = new Set([
  'stream.not.readable',
  'request.size.invalid',
  'entity.parse.failed',
  'entity.verify.failed',
])

function isDroppedBodyRead(error: unknown, req: IncomingMessage): boolean {
  return (
    (req as { _dumped?: unknown })._dumped === true && DROPPED_BODY_ERRORS.has(field(error, 'type'))
  )
}

/**
 * Express's error for a file send (`res.sendFile`, `res.download`) whose
 * response finished or closed before the file was sent in full.
 */
function isSendAborted(error: unknown): boolean {
  return field(error, 'code') === 'ECONNABORTED' && field(error, 'message') === 'Request aborted'
}

/** Node's error for a stream that closed before it ended or finished. */
function isPrematureClose(error: unknown): boolean {
  return field(error, 'code') === 'ERR_STREAM_PREMATURE_CLOSE'
}

/**
 * A property of what was passed to `next`, or undefined when it is no
 * object or reading it throws (a revoked Proxy, a throwing getter): thrown
 * here, that error replaced the app's own in its next error handler.
 */
function field(error: unknown, key: 'code' | 'message' | 'syscall' | 'type'): unknown {
  if (typeof error !== 'object' || error === null) return undefined
  try {
    return (error as Record<string, unknown>)[key]
  } catch {
    return undefined
  }
}
