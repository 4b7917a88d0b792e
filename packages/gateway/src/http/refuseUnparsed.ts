import { randomUUID } from 'node:crypto'
import type { Duplex } from 'node:stream'
import type { LogLevel } from '../log/GatewayLogger.js'
import { REQUEST_ID_HEADER } from './requestScope.js'
import { responseOn } from './responseOn.js'

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
 * A request already handed to the gateway when the parser fails (its body
 * broken off or malformed after its headers) is that request's: its handler
 * writes its line (the client left: 499). The connection gets what Node
 * would have written — its bare status line when that answer has not
 * started, else nothing — and is closed.
 */
export function refuseUnparsed(
  log: (level: LogLevel, event: string, fields: Record<string, unknown>) => void,
): (error: NodeJS.ErrnoException, socket: Duplex) => void {
  return (error, socket) => {
    if (error.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy()
      return
    }
    const status = statusOf(error.code)
    const answering = responseOn(socket)
    if (answering !== undefined) {
      if (!answering.headersSent) {
        socket.write(`HTTP/1.1 ${status} ${REASONS[status]}\r\nConnection: close\r\n\r\n`)
      }
      socket.destroy()
      return
    }
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
}
