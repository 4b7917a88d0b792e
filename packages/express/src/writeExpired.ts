import type { ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import { dropBodyHeaders } from './dropBodyHeaders.js'
import { isHttp2 } from './isHttp2.js'
import { keepHeadFields } from './keepHeadFields.js'
import { markCutInTrailer } from './markCutInTrailer.js'
import { markNoRetry } from './markNoRetry.js'
import { wholeBodyGiven } from './wholeBodyGiven.js'

export interface ExpiredBody {
  /** The request's budget, in ms. */
  budgetMs: number
  /** Time since the request arrived, in ms. */
  elapsedMs: number
  /** The slice that was running, if known. */
  slice: string | undefined
}

/**
 * Answer for a request whose time ran out. Before the response started: a 504
 * with a small JSON body (no stack, no message) and, when the budget was
 * the caller's (`callersBudget`, default true: without deadline() nothing
 * says otherwise), `x-deadline-expired: 1`
 * (`x-should-retry: false` for the SDKs: `markNoRetry`), written normally,
 * so a keep-alive connection stays usable. After it started (a stream): end
 * it, its trailer saying it was cut whoever's budget ran out — unless it
 * declared a Content-Length, which a cut-short body would contradict and
 * desynchronise the connection, or its client has stopped reading (its
 * buffers are full), so an end could never be flushed: then the socket is
 * destroyed, the cases where nothing cleaner is correct. One framed by the
 * connection's close (no length, no chunks: an HTTP/1.0 caller) is reset,
 * as a clean close would be its whole end (`resetConnection`).
 * A pipelined response still queued for its socket is ended: its buffered
 * writes wait their turn, not a client that stopped reading (see `queued`).
 * So is one that has handed its socket all the length it declared
 * (`givenBefore`: see `wholeBodyGiven`).
 */
export function writeExpired(
  res: ServerResponse,
  method: string | undefined,
  details: ExpiredBody,
  givenBefore?: number,
  callersBudget = true,
): '504' | 'ended' {
  // The handler's own response is complete (the error came from work done
  // after it: deadlineErrors() without deadline(), or in observe mode). It
  // may still be flushing: a destroy here would cut a whole answer short.
  if (res.writableEnded) return 'ended'
  if (res.headersSent && !discardUnsentHead(res, method)) {
    // A body framed by the connection's close (an HTTP/1.0 caller: nginx's
    // default `proxy_http_version`; a head with neither a length nor
    // chunks): a clean close is its whole end, and no trailer can say
    // otherwise — every client, and a proxy's cache, took the short body for
    // a whole 200. Only a reset tells it was cut.
    if (closeDelimited(res, method) && !wholeBodyGiven(res, givenBefore)) {
      resetConnection(res)
      return 'ended'
    }
    // A client that stopped reading (the buffers are full: a write is
    // waiting for 'drain') would never receive the end either: ending it
    // would hold the socket, and everything the response buffered, for good.
    const cut = cutLength(res, method) && !wholeBodyGiven(res, givenBefore)
    if (cut || (needsDrain(res) && !queued(res))) res.destroy()
    else {
      // Its head said 200: the last chunk says the deadline cut it, whoever's
      // deadline it was. Here the trailer means "this body is short", not
      // "your budget is gone": without it a stream cut by this server's own
      // cap (maxMs, defaultMs) read as a whole 200.
      markCutInTrailer(res, method)
      res.end()
    }
    return 'ended'
  }
  const body = JSON.stringify({
    error: 'deadline_exceeded',
    budgetMs: Math.round(details.budgetMs),
    elapsedMs: Math.round(details.elapsedMs),
    slice: details.slice ?? null,
  })
  dropBodyHeaders(res, false)
  res.statusCode = 504
  if (!isHttp2(res)) res.statusMessage = 'Gateway Timeout'
  res.setHeader('content-type', 'application/json; charset=utf-8')
  res.setHeader('content-length', Buffer.byteLength(body))
  res.setHeader('cache-control', 'no-store')
  markNoRetry(res, callersBudget)
  // A HEAD's answer has the headers of the body and not the body: Node
  // drops one written anyway, or, on a server made with
  // `rejectNonStandardBodyWrites`, throws (from the deadline's timer: an
  // uncaught exception, the process down).
  if (method === 'HEAD') res.end()
  else res.end(body)
  return '504'
}

/**
 * An HTTP/1 response queued behind another pipelined response on its
 * connection: it has no socket until the answers ahead of it are done, and
 * Node buffers what it writes meanwhile. Its writes past the high-water mark
 * say it waits its turn, not that its client stopped reading: destroyed for
 * that, it took the shared socket, and every later pipelined answer, with
 * it. A client that really stopped reading holds the response ahead, which
 * its own deadline ends. HTTP/2's streams each have their own flow control.
 */
export function queued(res: ServerResponse): boolean {
  return !isHttp2(res) && res.socket === null && !res.destroyed
}

/**
 * A write is waiting for room. HTTP/2's compat response has no
 * `writableNeedDrain` of its own: its stream's says it (the client's flow
 * control window is spent). Ended rather than destroyed there, the end
 * waited for room that never came, and the request never ended.
 */
function needsDrain(res: ServerResponse): boolean {
  if (res.writableNeedDrain) return true
  if (!isHttp2(res)) return false
  const stream = (res as { stream?: { writableNeedDrain?: unknown } }).stream
  return stream?.writableNeedDrain === true
}

/**
 * A head the handler wrote with `writeHead()` (or that a middleware wrote
 * for it) which has not left the process: Node stores it and sends it with
 * the first body byte, `flushHeaders()` or `end()`. Nothing of the response
 * is on the wire, so it has not started: ended as a stream, the client read
 * a 200 with an empty body that looked whole (an SSE route's `writeHead(200,
 * …)` before its first event); one that declared a `Content-Length` had its
 * socket destroyed, the caller getting no answer at all and the keep-alive
 * connection lost. The stored head is dropped (with what it set on the
 * response: chunked framing, no body for a 204/304), so the 504 is written
 * as for a response not started. So is a pipelined response still queued
 * for its socket that declared its length (see `queuedWithLength`): its
 * head and body are still all in Node's buffer. Not when a content coding
 * was chosen for it (`compression` decides on the head and then encodes
 * whatever `end()` is given): that one ends as a started response, as
 * before. HTTP/1 only (`_header`, `_headerSent`: Node's own marks);
 * HTTP/2's compat response has neither and is left as it is. True when the
 * head was dropped.
 */
export function discardUnsentHead(res: ServerResponse, method: string | undefined): boolean {
  if (!headUnsent(res) && !queuedWithLength(res, method)) return false
  dropQueuedOutput(res)
  const out = res as ServerResponse & { _header?: unknown; _hasBody?: boolean; _last?: boolean }
  const head = out._header as string
  out._header = null
  // The head may be the only record of the headers writeHead() was given
  // (none was set before it): stored now, as if merged.
  keepHeadFields(res, head)
  // A head framed by neither a length nor chunks (a proxy route that
  // removed both, then wrote its head) made Node mark the connection to
  // close after this response (`_last`), whatever the answer in its place:
  // the 504, framed by its own length, said `Connection: keep-alive` on a
  // connection then closed, and a request pipelined behind it went
  // unanswered. Node marks it again from the new head (a `Connection:
  // close` kept above); not when a client that half-closed its side sent
  // this request last, whose answer Node marks so too (the connection's
  // latest: one pipelined behind it is answered, and the connection ends
  // after that one).
  if (!FRAMED.test(head) && !lastBeforeHalfClose(res)) out._last = false
  // What the head said of its own body goes with it: `writeHead(status,
  // headers)` merges its headers into the stored ones (whenever one was set
  // before it, as Express's X-Powered-By is; else just above) and its reason
  // phrase stays on the response. `respond` answered with them: `504 OK`, its JSON
  // typed `text/event-stream`, or sent chunked.
  res.statusMessage = undefined as unknown as string
  dropBodyHeaders(res, true)
  res.chunkedEncoding = false
  // writeHead(204 | 304) said "no body"; the 504 has one (a HEAD's never does).
  out._hasBody = method !== 'HEAD'
  return true
}

/** A head that says how its body ends: by a length, or by chunks. */
const FRAMED = /\r\n(?:content-length|transfer-encoding):/i

/**
 * The client has ended its side of the connection (its FIN, read by Node)
 * and this response's request is the last it sent: the one Node marks to
 * close the connection after (`socketOnEnd` marks the latest response only).
 */
function lastBeforeHalfClose(res: ServerResponse): boolean {
  type Req = { socket?: { readableEnded?: boolean; parser?: { incoming?: unknown } | null } | null }
  const req = (res as { req?: Req }).req
  const socket = req?.socket
  if (socket?.readableEnded !== true) return false
  const parser = socket.parser
  return parser === null || parser === undefined || parser.incoming === req
}

/**
 * The response holds a head `discardUnsentHead` would drop (see there): not
 * started, for all that `headersSent` says. Reads only.
 */
export function headUnsent(res: ServerResponse): boolean {
  return headStoredOnly(res) && !codingByWrapper(res)
}

/**
 * A content coding chosen by a wrapper of the response's writers:
 * `compression` decides on the head and then encodes whatever `end()` is
 * given, so the 504 written in the head's place would go out encoded with
 * its label dropped. Such a wrapper replaces `write` on the response (the
 * handler's streamed writes would pass it by otherwise). A coding the route
 * labelled its own bytes with, no wrapper in the way (a proxy relaying its
 * upstream's `Content-Encoding: gzip` head), says nothing of the 504: it
 * goes with the head it labels. Reads only.
 */
function codingByWrapper(res: ServerResponse): boolean {
  return res.getHeader('content-encoding') !== undefined && Object.hasOwn(res, 'write')
}

/**
 * A head stored by `writeHead()`, and nothing of the response handed on
 * yet: what goes out next still comes ahead of it (see
 * `writeContinueAhead`). Reads only.
 */
export function headStoredOnly(res: ServerResponse): boolean {
  const out = res as ServerResponse & { _header?: unknown; _headerSent?: unknown }
  if (typeof out._header !== 'string' || out._headerSent !== false) return false
  // Body bytes written: on Node 24 `_headerSent` stays false after a
  // `write()` (the chunk waits in the response's own buffer, the head to go
  // with it), so only the bytes waiting tell a started response apart. Not
  // an interim head waiting there (a `103 Early Hints` written while the
  // response was queued behind another pipelined one): no byte of this
  // answer. Counted, the head it stored read as a started stream, ended at
  // the deadline: the caller read an empty 200 in place of its 504.
  return res.writableLength === interimWaiting(res)
}

/** The bytes of interim heads (see `interim`) waiting in the response's own buffer. */
function interimWaiting(res: ServerResponse): number {
  const pending = (res as ServerResponse & { outputData?: Pending[] }).outputData
  if (!Array.isArray(pending)) return 0
  let size = 0
  for (const entry of pending) if (interim(entry)) size += (entry.data as string).length
  return size
}

/**
 * A started HTTP/1 response whose head declared neither a length nor chunks:
 * its body ends where the connection closes. Not a bodiless one, nor one
 * still queued behind another answer on its connection (nothing of it has
 * left: see `queuedWithLength`).
 */
function closeDelimited(res: ServerResponse, method: string | undefined): boolean {
  const head = (res as ServerResponse & { _header?: unknown })._header
  if (typeof head !== 'string' || res.chunkedEncoding || isHttp2(res) || queued(res)) return false
  if (typeof res.socket?.resetAndDestroy !== 'function') return false
  if (method === 'HEAD' || res.statusCode < 200 || res.statusCode === 204 || res.statusCode === 304)
    return false
  return !FRAMED.test(head)
}

/**
 * Reset the response's connection: an RST, which no client takes for the
 * body's end. A TLS socket's own handle is no TCP one (`resetAndDestroy`
 * throws ERR_INVALID_HANDLE_TYPE): the TCP socket under it is reset. A Unix
 * socket has no reset: it is closed, as before.
 */
function resetConnection(res: ServerResponse): void {
  const socket = res.socket as Socket & { _parent?: Socket | null }
  const tcp = socket._parent ?? socket
  try {
    tcp.resetAndDestroy()
  } catch {
    // No TCP handle under it (a Unix socket, a socket passed in by hand).
  }
  socket.destroy()
}

/**
 * A started response that declared its length (a `Content-Length`, or
 * Node's own framing for one that is neither chunked nor closing the
 * connection) and has a body: cut short, it cannot be ended truthfully.
 */
function cutLength(res: ServerResponse, method: string | undefined): boolean {
  // A Content-Length passed to writeHead(status, headers) is not stored
  // (getHeader cannot see it), but then Node has kept a response that is
  // neither chunked nor closing the connection: its length is declared.
  const fixedLength =
    !res.chunkedEncoding && (res.getHeader('content-length') !== undefined || res.shouldKeepAlive)
  const bodiless = method === 'HEAD' || res.statusCode === 204 || res.statusCode === 304
  return fixedLength && !bodiless
}

/**
 * A pipelined response still queued behind another on its connection (see
 * `queued`) that declared its length and wrote part of its body (a
 * `res.sendFile` whose file was being read): none of it has left the
 * process — Node holds its head and body in the response's own buffer
 * until the answers ahead are done. It was taken for a started response
 * and destroyed, as one cut short on the wire must be: the destroy took the
 * shared connection when its turn came, the caller got no answer at all
 * and every answer pipelined after it was lost. Nothing of it is on the
 * wire, so it is dropped and the 504 goes in its place, as for a head not
 * sent (`headUnsent`). A queued chunked one is still ended (a complete,
 * shorter body), as before; one with a content coding chosen for it too.
 */
function queuedWithLength(res: ServerResponse, method: string | undefined): boolean {
  const out = res as ServerResponse & { _header?: unknown; outputData?: unknown }
  if (!queued(res) || typeof out._header !== 'string' || !Array.isArray(out.outputData)) {
    return false
  }
  return cutLength(res, method) && !codingByWrapper(res)
}

export type Pending = { data?: unknown; callback?: unknown }

/**
 * Empty what Node holds for a queued response (its head and body, see
 * `queuedWithLength`); nothing for a response with nothing buffered. An
 * interim head written ahead of it stays (a `100 Continue` deadline()
 * wrote for a client holding its body back: dropped, that client never
 * sent it, and the connection waited for it). The server's count of what
 * its connection has pending is lowered with it (as Node's own flush does:
 * it pauses reading the socket past a limit), and a dropped write's
 * callback is still called, as Node calls one for a write it drops.
 */
function dropQueuedOutput(res: ServerResponse): void {
  const out = res as ServerResponse & {
    outputData?: Pending[]
    outputSize?: number
    _onPendingData?: (delta: number) => void
    _headerSent?: boolean
  }
  const pending = out.outputData
  if (!Array.isArray(pending) || pending.length === 0) return
  const kept = pending.filter(interim)
  const keptSize = kept.reduce((size, { data }) => size + (data as string).length, 0)
  out._onPendingData?.(keptSize - (out.outputSize ?? 0))
  out.outputData = kept
  out.outputSize = keptSize
  // The head went into the buffer with the first write: the 504's goes now.
  out._headerSent = false
  // The bytes the handler wrote are gone: the 504's own length is the one checked.
  res.strictContentLength = false
  for (const entry of pending) {
    if (typeof entry.callback === 'function' && !kept.includes(entry)) {
      process.nextTick(entry.callback as () => void)
    }
  }
}

/** An interim head (`100 Continue`, `103 Early Hints`) Node buffered ahead of the response's own. */
export function interim({ data }: Pending): boolean {
  return typeof data === 'string' && /^HTTP\/1\.1 1\d\d /.test(data)
}
