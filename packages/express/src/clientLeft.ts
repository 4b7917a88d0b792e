import type { IncomingMessage } from 'node:http'

/**
 * Whether a response that closed before it ended (not destroyed with an
 * error of its own) did so because its client left — judged at its
 * `close`, from the connection, never on the success path.
 *
 * The client leaving shows on the socket: its FIN ended the readable side
 * (`readableEnded`), or its reset broke the connection (`errored` with an
 * OS error: `ECONNRESET` on read, `EPIPE` on write, which Node gives a
 * `syscall`). A close without either is the server's own cut: the handler's
 * `res.destroy()`, `server.closeAllConnections()`, a `server.timeout` —
 * they destroy the socket without an error — or Node's `requestTimeout`
 * (`ERR_HTTP_REQUEST_TIMEOUT`, no `syscall`). Calling those `client-closed`
 * blamed a caller who was still there, watching its answer being cut.
 *
 * HTTP/2 (the compat API) cannot be told apart here: `req.socket` is the
 * whole session's connection, which a client leaving one request (its
 * RST_STREAM) does not touch. It is taken as the client leaving, as before.
 */
export function clientLeft(req: IncomingMessage): boolean {
  if (req.httpVersionMajor >= 2) return true
  const socket = req.socket as
    | { readableEnded?: boolean; errored?: { syscall?: unknown } | null }
    | null
    | undefined
  if (socket?.readableEnded === true) return true
  return typeof socket?.errored?.syscall === 'string'
}

/**
 * What a server-side cut without an error is reported with, and what the
 * request's deadline is cancelled with: the socket's own error when it has
 * one (`ERR_HTTP_REQUEST_TIMEOUT`), else Node's word for a stream destroyed
 * before it ended — the `ERR_STREAM_PREMATURE_CLOSE` that `pipeline` and
 * `finished` report for it, so code already handling that one knows it.
 */
export function serverCut(req: IncomingMessage): Error {
  const errored = (req.socket as { errored?: unknown } | null | undefined)?.errored
  if (errored instanceof Error) return errored
  return Object.assign(new Error('Premature close'), { code: 'ERR_STREAM_PREMATURE_CLOSE' })
}
