import type { IncomingMessage } from 'node:http'
import type { Socket } from 'node:net'

/**
 * End the read of an upload still arriving when the deadline answered, if
 * its connection then closes before the body's end. Node aborts a request
 * whose connection closes (`abortIncoming`: 'aborted', then the request
 * destroyed with `ECONNRESET` "aborted") only while its response is
 * unfinished; the 504 finished it, so a client that then left mid-upload —
 * undici closes its socket whenever the answer comes before its upload is
 * sent — told the request nothing. Whoever read its body (body-parser, a
 * `for await` over `req`, `pipeline(req, file)`) waited for good: the
 * route's `finally` (a temp file removed, a gauge decremented, a slot
 * released) never ran. Now it ends as for a client that leaves before the
 * answer, with Node's own error (body-parser's "request aborted";
 * `deadlineErrors()` swallows both).
 *
 * Called as the 504 goes out, before `shieldSocket` (`socket` is the real
 * one), over HTTP/1. One listener on the connection, removed when the
 * request's body ends or the request is destroyed.
 */
export function abortUploadOnClose(req: IncomingMessage): void {
  const socket = req.socket as Socket | null
  if (socket === null || req.complete || req.httpVersionMajor >= 2) return
  const onClose = (): void => {
    release()
    if (req.complete || req.destroyed) return
    req.destroy(Object.assign(new Error('aborted'), { code: 'ECONNRESET' }))
  }
  const release = (): void => {
    socket.off('close', onClose)
    req.off('end', release)
    req.off('close', release)
  }
  socket.on('close', onClose)
  req.on('end', release)
  req.on('close', release)
}
