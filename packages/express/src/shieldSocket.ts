import { IncomingMessage } from 'node:http'
import type { Socket } from 'node:net'

/**
 * Keep whatever runs after the deadline answered from killing a keep-alive
 * connection through this request. Express's final handler (finalhandler 1.x
 * and 2.x), given an error for a response whose headers were sent, calls
 * `req.socket.destroy()` — and an async handler whose signal we just aborted
 * rejects right after our 504, with requests of other callers queued on the
 * same socket. That is how connect-timeout resets other requests.
 *
 * From now on `req.socket` is a view of the real socket whose `destroy()` does
 * nothing; everything else (Node dumping an unread body, reads of `remoteAddress`)
 * goes through to the socket. Only this request object sees the view: the next
 * request on the connection gets the real socket, and the server itself never
 * reads `req.socket`.
 *
 * The request's own destroy goes through it too (see `destroyRequestOnly`).
 */
export function shieldSocket(req: IncomingMessage): void {
  const socket = req.socket as Socket | null | undefined
  if (!socket) return
  const view = new Proxy(socket, {
    get(target, property) {
      if (property === 'destroy') return destroyNothing
      const value = Reflect.get(target, property, target) as unknown
      return typeof value === 'function' ? value.bind(target) : value
    },
    set(target, property, value) {
      return Reflect.set(target, property, value, target)
    },
  })
  function destroyNothing(): Socket {
    return view
  }
  Object.defineProperty(req, 'socket', {
    value: view,
    writable: true,
    configurable: true,
    enumerable: true,
  })
  // HTTP/1 only: HTTP/2's compat request is a stream of its own, whose
  // destroy resets its stream, never the session's socket.
  if (req instanceof IncomingMessage && req._destroy === IncomingMessage.prototype._destroy) {
    Object.defineProperty(req, '_destroy', {
      value: destroyRequestOnly,
      writable: true,
      configurable: true,
      enumerable: false,
    })
  }
}

/**
 * The request's destroy once the socket is shielded: a handler stopping its
 * read of the upload at the 504 (`addAbortSignal(req.deadline.signal, req)`,
 * `req.destroy()` on the signal). Node's own, for a body not read to its
 * end, destroys the socket and completes — the request's 'error' and
 * 'close', which a `for await` over it, `finished(req)` and a web stream
 * made from it wait for — only once that socket has closed. The shielded
 * socket is kept for the connection's next request, so the handler stayed
 * stuck in its read until the client closed the keep-alive connection (its
 * `finally` never ran while the connection stayed busy). So Node's own
 * destroy runs with the socket read as already destroyed for the call: its
 * branch that leaves the socket alone still emits
 * 'aborted' for a body cut short (`dropCutUpload` drops the rest of it),
 * aborts Node 24's `req.signal`, and completes on the next tick.
 */
function destroyRequestOnly(
  this: IncomingMessage,
  error: Error | null,
  callback: (error?: Error | null) => void,
): void {
  const request = this as { socket: Socket | null }
  const view = request.socket
  // Not null: Node emits 'aborted' (and on Node 24 aborts `req.signal`)
  // inside its destroy, and a listener reading `req.ip` or
  // `req.socket.remoteAddress` then threw, failing the request with that
  // TypeError. A view that reads as destroyed skips Node's socket branch the same.
  request.socket = view === null ? null : destroyedView(view)
  try {
    IncomingMessage.prototype._destroy.call(this, error, callback)
  } finally {
    request.socket = view
  }
}

/** `socket` as it is, but for `destroyed`, which reads true. */
function destroyedView(socket: Socket): Socket {
  return new Proxy(socket, {
    get(target, property) {
      return property === 'destroyed' ? true : Reflect.get(target, property)
    },
  })
}
