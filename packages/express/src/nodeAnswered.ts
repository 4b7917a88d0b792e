import type { EventEmitter } from 'node:events'
import type { IncomingMessage, ServerResponse } from 'node:http'

/**
 * The status of the answer Node wrote itself, on the raw socket, for a
 * request it cut (outcome `error`), or undefined when it wrote none. Node's
 * HTTP/1 server answers a socket error before destroying the connection
 * (`socketOnError` in `_http_server`): `408` for its `requestTimeout` (a body
 * still arriving), `400` for a malformed request (a bad chunk size), `431`
 * and `413` for a trailer or chunk extension over its limits — provided
 * the server has no `clientError` listener (which answers in its place),
 * and the response on the connection has not sent its head. The response
 * object never sees that answer: its `statusCode` still read Express's
 * default 200, and the end event said the caller got a 200 it never saw.
 * Read only for a response cut without an error of its own: never on the
 * success path.
 */
export function nodeAnswered(
  req: IncomingMessage,
  res: ServerResponse,
  error: unknown,
): number | undefined {
  if (req.httpVersionMajor >= 2) return undefined
  const code = (error as { code?: unknown } | null | undefined)?.code
  if (typeof code !== 'string') return undefined
  const status = rawStatus(code)
  if (status === undefined) return undefined
  const socket = req.socket as
    | { _httpMessage?: unknown; errored?: unknown; server?: EventEmitter | null }
    | null
    | undefined
  // Node's own error on this connection, written for this response: the
  // one the socket was carrying (one queued behind it got nothing), its head
  // not yet sent.
  if (socket === null || socket === undefined) return undefined
  if (socket.errored !== error || socket._httpMessage !== res) return undefined
  if ((res as { _headerSent?: unknown })._headerSent === true) return undefined
  const server = socket.server
  if (server === null || server === undefined || server.listenerCount('clientError') > 0) {
    return undefined
  }
  return status
}

/** Node's answer for a socket error with this code (Node 20–24's `socketOnError`). */
function rawStatus(code: string): number | undefined {
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return 408
  if (code === 'HPE_HEADER_OVERFLOW') return 431
  if (code === 'HPE_CHUNK_EXTENSIONS_OVERFLOW') return 413
  // Every other parse error of llhttp's.
  if (code.startsWith('HPE_')) return 400
  return undefined
}
