import type { IncomingMessage } from 'node:http'
import type { Socket } from 'node:net'

/** The requests whose upload was cut by a 504, per connection: one 'close' listener each. */
const cutOn = new WeakMap<Socket, Set<IncomingMessage>>()

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
 * one), over HTTP/1. One listener per connection however many requests on
 * it were cut, as `closeIfOrphaned` keeps: a request leaves the set when it
 * closes, or when the next cut finds its body received in full — a reader
 * that stopped partway (a sniffer that read one chunk) never reads to the
 * 'end', and a listener per such request piled up on a long keep-alive
 * connection, each holding its request.
 */
export function abortUploadOnClose(req: IncomingMessage): void {
  const socket = req.socket as Socket | null
  if (socket == null || req.complete || req.httpVersionMajor >= 2) return
  let cut = cutOn.get(socket)
  if (cut === undefined) {
    const waiting = new Set<IncomingMessage>()
    cut = waiting
    cutOn.set(socket, waiting)
    socket.once('close', () => {
      cutOn.delete(socket)
      for (const request of waiting) {
        if (!request.complete && !request.destroyed) {
          request.destroy(Object.assign(new Error('aborted'), { code: 'ECONNRESET' }))
        }
      }
      waiting.clear()
    })
  } else {
    for (const request of cut) if (request.complete || request.destroyed) cut.delete(request)
  }
  const list = cut
  list.add(req)
  req.once('close', () => list.delete(req))
}
