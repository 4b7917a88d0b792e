import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'

/** Per connection, the responses queued behind the one being written (pipelined requests). */
const queuedOn = new WeakMap<Socket, Set<ServerResponse>>()

/**
 * A pipelined request (sent on a connection before the answer to the one
 * ahead of it) gets a response that waits in Node's queue without a socket,
 * and Node never emits 'close' on it when the connection dies: only the
 * answer being written is told. Every 'close' listener that stops work for a
 * client that left (`deadline()`'s, the gateway's tracker) missed it, so the
 * client went on paying for each queued request: run to its end, upstream
 * calls and all (50 pipelined, then a hang-up: 49 ran on). Here the
 * connection's close closes each response still queued as Node closes the
 * one at its head (`onServerResponseClose`: `destroyed`, `_closed`, 'close').
 * One listener per connection however many wait on it; a response leaves the
 * list when its turn comes (Node then watches the socket for it) or it ends.
 * A connection already closed closes the response at once (synchronously:
 * listen to 'close' first). Safe to call twice for one response; a no-op
 * for one that has its socket.
 */
export function closeIfOrphaned(req: IncomingMessage, res: ServerResponse): void {
  if (res.socket !== null) return
  const socket = req.socket
  // HTTP/2's compat API has no queue: every stream has its own close.
  if (socket === null || socket === undefined) return
  // Gone already (while a middleware ahead awaited something): its 'close'
  // will not come again, and Node 20/22 never marked this response.
  if (socket.closed) {
    closeOrphan(res)
    return
  }
  let queued = queuedOn.get(socket)
  if (queued === undefined) {
    const waiting = new Set<ServerResponse>()
    queued = waiting
    queuedOn.set(socket, waiting)
    socket.once('close', () => {
      queuedOn.delete(socket)
      for (const orphan of waiting) closeOrphan(orphan)
      waiting.clear()
    })
  }
  if (queued.has(res)) return
  const list = queued
  list.add(res)
  const leave = () => {
    list.delete(res)
    res.off('socket', leave)
    res.off('close', leave)
  }
  res.once('socket', leave)
  res.once('close', leave)
}

function closeOrphan(res: ServerResponse): void {
  const closed = res as ServerResponse & { _closed?: boolean }
  if (res.socket !== null || res.writableFinished || closed._closed === true) return
  res.destroyed = true
  closed._closed = true
  res.emit('close')
}
