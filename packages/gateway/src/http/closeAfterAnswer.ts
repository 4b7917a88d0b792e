import type { Socket } from 'node:net'
import type { Response } from 'express'

/** How long a connection whose upload was refused is still read from after the answer, at most. */
export const LINGER_MS = 2000
/** How much of such an upload is read and thrown away after the answer, at most. */
export const LINGER_BYTES = 16 * 1024 * 1024

const lingering = new WeakSet<Socket>()

/**
 * The answer to a request whose body was not read to its end (too large,
 * refused, its deadline spent) closes the connection — the client still owes
 * body bytes nobody will read — without losing the answer. Node ends such a
 * connection with `destroySoon()`: FIN, then destroy as soon as the answer is
 * written; with upload bytes still unread, the kernel answers them with a
 * reset, and a client still sending (python's requests and httpx send the
 * whole body before they read) never sees the answer. So, as nginx's
 * lingering close: FIN after the answer, then keep reading and throwing
 * away what the client sends until it stops (its own FIN), for at most
 * `LINGER_MS` or `LINGER_BYTES`, then destroy. A socket closed by the server
 * (a drain's `closeAllConnections`) goes at once.
 */
export function closeAfterAnswer(res: Response): void {
  if (!res.headersSent) res.setHeader('connection', 'close')
  const socket = res.socket
  if (socket === null || socket.destroyed || lingering.has(socket)) return
  lingering.add(socket)
  socket.destroySoon = () => linger(socket)
}

/** How often a lingering connection's bytes read are checked against `LINGER_BYTES`. */
const CHECK_MS = 50

/**
 * Node's parser keeps reading the socket and drops the rest of the body
 * (the request is dumped once its answer is written). Counted with
 * `bytesRead`, not a `data` listener: one would take the socket from the
 * parser mid-read, and the body no longer reaches the request.
 */
function linger(socket: Socket): void {
  if (socket.writable) socket.end()
  const from = socket.bytesRead
  const end = () => {
    clearInterval(check)
    clearTimeout(timer)
  }
  const timer = setTimeout(() => socket.destroy(), LINGER_MS)
  const check = setInterval(() => {
    if (socket.bytesRead - from > LINGER_BYTES) socket.destroy()
  }, CHECK_MS)
  timer.unref()
  check.unref()
  socket.once('close', end)
  // The client is done sending: close once the answer is written (destroy() drops what is still queued).
  socket.once('end', () => {
    if (socket.writableFinished) socket.destroy()
    else socket.once('finish', () => socket.destroy())
  })
}
