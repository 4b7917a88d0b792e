import type { IncomingMessage } from 'node:http'
import type { Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import type { LogLevel } from '../log/GatewayLogger.js'
import { REQUEST_ID_HEADER, requestIdFrom } from './requestScope.js'
import { inTurn } from './responseOn.js'

/** How long the 405 may take to leave before its connection is dropped, ms. */
const FLUSH_LIMIT_MS = 5000

/**
 * A server's `connect` listener. A CONNECT is a client given the gateway as
 * its HTTPS proxy (`curl -x`, `HTTPS_PROXY`); with no listener Node destroys
 * its socket with nothing written: curl said "Proxy CONNECT aborted", and
 * the gateway had no answer, no `x-request-id` and no log line for it.
 * Answered as the gateway's other refusals ahead of the router are
 * (`refuseUnparsed`): 405 in OpenAI's error shape, the client's id kept (its
 * headers were read), the connection closed, one `request` line.
 */
export function refuseConnect(
  log: (level: LogLevel, event: string, fields: Record<string, unknown>) => void,
): (req: IncomingMessage, socket: Duplex) => void {
  return (req, socket) => {
    socket.on('error', () => {})
    // Behind a request still being answered on this connection (pipelined):
    // written once every answer before it is out.
    inTurn(socket, () => refuse(req, socket))
  }

  function refuse(req: IncomingMessage, socket: Duplex): void {
    const id = requestIdFrom(req.headers[REQUEST_ID_HEADER])
    const body = JSON.stringify({
      error: {
        message:
          'CONNECT is not allowed: the gateway is no proxy (point the client\'s baseURL at it, "http://<host>:<port>/v1")',
        type: 'invalid_request_error',
        param: null,
        code: 'method_not_allowed',
      },
    })
    // Written, then closed once flushed (the server's sockets stay half-open
    // after an end: a client waiting for its tunnel never closes its side).
    // Whatever it sends next would be the tunnel's bytes, not HTTP.
    socket.once('finish', () => socket.destroy())
    // Node's request timeouts no longer watch a socket handed to 'connect':
    // a client that reads nothing (the answer never flushed) is bounded here.
    const raw = socket as Socket
    raw.setTimeout(FLUSH_LIMIT_MS, () => raw.destroy())
    socket.end(
      'HTTP/1.1 405 Method Not Allowed\r\n' +
        `${REQUEST_ID_HEADER}: ${id}\r\n` +
        'allow: GET, HEAD, POST\r\n' +
        'content-type: application/json; charset=utf-8\r\n' +
        `content-length: ${Buffer.byteLength(body)}\r\n` +
        'connection: close\r\n\r\n' +
        body,
    )
    log('info', 'request', {
      requestId: id,
      method: 'CONNECT',
      status: 405,
      error: 'method_not_allowed',
      reason: 'connect',
    })
  }
}
