import type { IncomingMessage } from 'node:http'
import type { Socket } from 'node:net'

/**
 * Keep a keep-alive connection serving after the deadline answered a request
 * whose body was still arriving, when the request is then destroyed:
 * `pipeline(req, sink, { signal: req.deadline.signal })` (the README's
 * advice) does it as the 504 goes out. Node's parser offers each later chunk
 * of the body to the destroyed request, which refuses it, and pauses the
 * socket for that (`parserOnBody`'s `readStop`) — for good: the rest of the
 * upload was never read, and the next request on the connection (pipelined,
 * or sent after the 504) was never answered, until Node's `requestTimeout`.
 * Plain Node is stuck the same way. So the rest of the body is dropped as
 * Node drops that of a request nobody read (`_dump()`: the parser then
 * discards it rather than offer it) and the socket is read again: the
 * connection serves the next request, as it does for an upload the handler
 * merely stopped reading. Closing the connection instead would reset it on
 * the unread upload, and that reset can make the client drop the 504 unread.
 *
 * Called before `shieldSocket` (`socket` is the real one) while the body is
 * unfinished, over HTTP/1. 'aborted' is Node's word, emitted as the request
 * is destroyed, that it was destroyed before its body ended; a client that
 * left does it too, its socket destroyed: nothing to read then.
 */
export function dropCutUpload(req: IncomingMessage): void {
  const socket = req.socket as Socket | null
  if (socket == null || req.complete || req.httpVersionMajor >= 2) return
  req.once('aborted', () => {
    const dump = (req as { _dump?: unknown })._dump
    if (typeof dump !== 'function') return
    dump.call(req)
    // As Node's own `readStart`: not a socket its server paused itself (a
    // pipelined request waiting for the answers ahead of it), nor one closed.
    if ((socket as { _paused?: boolean })._paused !== true && socket.readable) socket.resume()
  })
}
