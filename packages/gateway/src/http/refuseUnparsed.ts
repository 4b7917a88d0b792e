import { randomUUID } from 'node:crypto'
import type { ServerResponse } from 'node:http'
import type { Duplex } from 'node:stream'
import type { LogLevel } from '../log/GatewayLogger.js'
import { closeAfterAnswer } from './closeAfterAnswer.js'
import { REQUEST_ID_HEADER, scopeOf } from './requestScope.js'
import { inTurn, responseOn } from './responseOn.js'
import { sendJson } from './sendJson.js'

/** Sockets refused already: a failed parser fails again on every chunk that still comes. */
const refusing = new WeakSet<Duplex>()

/** Node's statuses for what its parser refuses (its own default answers). */
function statusOf(code: string | undefined): number {
  if (code === 'HPE_HEADER_OVERFLOW') return 431
  if (code === 'HPE_CHUNK_EXTENSIONS_OVERFLOW') return 413
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return 408
  return 400
}

const REASONS: Record<number, string> = {
  400: 'Bad Request',
  408: 'Request Timeout',
  413: 'Payload Too Large',
  431: 'Request Header Fields Too Large',
}

/**
 * A server's `clientError` listener: a request Node's HTTP parser could not
 * read (a control character in a header value — a hostile `x-request-id` —,
 * headers past Node's 16 KiB, a malformed request line). Node's own answer
 * is a bare `400 Bad Request` with no body, no `x-request-id` and no log
 * line: a refusal nobody could trace, as Node's 417 was (see startGateway).
 * Answered here in OpenAI's error shape with a new id, Node's status (400,
 * 431 for headers too large, 408 for headers that never finished, 413 for
 * chunk extensions too long), the connection closed, and one `request`
 * line (no path: none was read).
 *
 * A request already handed to the gateway when the parser fails is that
 * request's, its client still sending: its own body malformed (a bad chunk
 * size) is answered through its response, 400 `invalid_body` with its id,
 * its line and count saying so; a request pipelined behind it malformed is
 * refused as above once the answers ahead are out (`inTurn`). A body
 * broken off by the client's FIN is that request's too, its handler writing
 * its line (the client left: 499): the connection gets what Node would have
 * written — its bare status line when that answer has not started, else
 * nothing — and is closed.
 */
export function refuseUnparsed(
  log: (level: LogLevel, event: string, fields: Record<string, unknown>) => void,
): (error: NodeJS.ErrnoException, socket: Duplex) => void {
  return (error, socket) => {
    // Its answer is on its way (below): leave the connection to it.
    if (refusing.has(socket)) return
    if (error.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy()
      return
    }
    const status = statusOf(error.code)
    const answering = responseOn(socket)
    // The client still sending (not a body cut short by its FIN: that
    // request's line says 499, its client left).
    if (
      answering !== undefined &&
      !socket.readableEnded &&
      (answering.req.complete || ownBodyFailed(answering))
    ) {
      // Either its own body is what the parser refused (a bad chunk size, a
      // trailer it does not take) — answered through its response, with its
      // x-request-id, its line and count 400 `invalid_body`: it got Node's
      // bare 400, no id, and was logged 499 `client_closed` —, or a request
      // pipelined behind it: its bare 400, written at once, went out as this
      // one's answer, and the close cut it (logged 499, its upstream work
      // lost). The answers ahead go out first, then its own, as a CONNECT's
      // 405 (refuseConnect), none after one that closed; one handed over
      // behind them whose body broke is answered as its own when its turn
      // comes (its handler waits for a body that never comes).
      refusing.add(socket)
      inTurn(
        socket,
        () => refuseAlone(log, error, socket, status),
        (next) => {
          if (!ownBodyFailed(next)) return false
          answerOwnBody(next, socket, error, status)
          return true
        },
      )
      return
    }
    if (answering !== undefined) {
      if (!answering.headersSent) {
        socket.write(`HTTP/1.1 ${status} ${REASONS[status]}\r\nConnection: close\r\n\r\n`)
      }
      socket.destroy()
      return
    }
    refuseAlone(log, error, socket, status)
  }
}

/**
 * Its handler is reading its body (the chat route's `readBody`), which the
 * parser's failure broke: answered here, a failed read ends that handler
 * with nothing more to write. Not a response whose handler never reads
 * (`/readyz` sent a chunked body): answering for it, its own answer came
 * after and threw `ERR_HTTP_HEADERS_SENT`, unhandled.
 */
function ownBodyFailed(res: ServerResponse): boolean {
  return !res.req.complete && !res.headersSent && res.req.readableFlowing === true
}

/** Its own body refused by the parser: 400 `invalid_body` through its response, the connection closed after it. */
function answerOwnBody(
  answering: ServerResponse,
  socket: Duplex,
  error: NodeJS.ErrnoException,
  status: number,
): void {
  const scope = scopeOf(answering)
  if (scope !== undefined) scope.errorCode = 'invalid_body'
  closeAfterAnswer(answering)
  answering.setHeader('x-should-retry', 'false')
  // Ends the body read (the handler writes its line) once the lingering
  // close is over: destroyed at the answer's finish, it reset an upload
  // still coming, its 400 lost.
  socket.once('close', () => answering.req.destroy())
  sendJson(answering, status, {
    error: {
      message: `the body could not be read as HTTP (${error.code ?? 'parse error'})`,
      type: 'invalid_request_error',
      param: 'body',
      code: 'invalid_body',
    },
  })
}

/** The refusal of a request no response was made for: OpenAI's shape, a new id, its line. */
function refuseAlone(
  log: (level: LogLevel, event: string, fields: Record<string, unknown>) => void,
  error: NodeJS.ErrnoException,
  socket: Duplex,
  status: number,
): void {
  const id = randomUUID()
  const body = JSON.stringify({
    error: {
      message: `the request could not be read as HTTP (${error.code ?? 'parse error'}): nothing was sent`,
      type: 'invalid_request_error',
      param: null,
      code: 'invalid_request',
    },
  })
  // Written, then closed, as Node's own answer is.
  socket.write(
    `HTTP/1.1 ${status} ${REASONS[status]}\r\n` +
      `${REQUEST_ID_HEADER}: ${id}\r\n` +
      'content-type: application/json; charset=utf-8\r\n' +
      `content-length: ${Buffer.byteLength(body)}\r\n` +
      'connection: close\r\n\r\n' +
      body,
  )
  socket.destroy()
  log('info', 'request', {
    requestId: id,
    status,
    error: 'invalid_request',
    reason: error.code,
  })
}
