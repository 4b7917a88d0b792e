import type { IncomingMessage, Server } from 'node:http'
import type { Socket } from 'node:net'
import type { Deadline } from '@hourglass/core'

/**
 * Keep Node's `server.requestTimeout` for a request the deadline answered
 * before its body had arrived. Node bounds the time to receive a whole
 * request only until its response is sent: after our 504 the rest of the
 * upload is read and dropped for as long as it lasts, so a client trickling
 * a byte now and then held the socket for good — the 504 took away the bound
 * the same request had without it (Node's 408 and close at `requestTimeout`).
 * The socket is destroyed when the request, counted from when `deadline()`
 * took it, has run `requestTimeout` without its body complete (none with
 * `requestTimeout` 0, as in Node). No `Connection: close` on the 504 instead:
 * Node would close the socket right after it, on the unread upload, and the
 * reset that sends can make the client drop the 504 unread.
 *
 * `socket` is the real one (read before `shieldSocket` hides its `destroy`).
 * The timer and listeners go when the body completes or the socket closes.
 */
export function boundUpload(req: IncomingMessage, socket: Socket | null, deadline: Deadline): void {
  if (req.complete || socket === null || socket.destroyed || req.httpVersionMajor !== 1) return
  const limitMs = (socket as Socket & { server?: Server }).server?.requestTimeout
  if (typeof limitMs !== 'number' || !(limitMs > 0) || !Number.isFinite(limitMs)) return
  const clock = deadline.clock
  const release = (): void => {
    clock.clearTimeout(timer)
    req.off('end', release)
    socket.off('close', release)
  }
  const timer = clock.setTimeout(
    () => {
      release()
      if (!req.complete) socket.destroy()
    },
    Math.max(0, limitMs - deadline.elapsed()),
  )
  req.once('end', release)
  socket.once('close', release)
}
