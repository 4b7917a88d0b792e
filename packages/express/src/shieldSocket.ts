import type { IncomingMessage } from 'node:http'
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
}
