import type { ServerResponse } from 'node:http'
import type { Socket } from 'node:net'

/** How long a connection whose upload was refused is still read from after the answer, at most. */
export const LINGER_MS = 2000
/** How much of such an upload is read and thrown away after the answer, at most. */
export const LINGER_BYTES = 16 * 1024 * 1024

/** Sockets closed after their answer (`destroySoon` replaced or the close begun): at most once each. */
const lingering = new WeakSet<Socket>()
/** Sockets whose lingering close has begun. */
const ended = new WeakSet<Socket>()
/** Sockets one of whose answers said `connection: close`: nothing queued behind it gets the socket. */
const lastAnswered = new WeakSet<Socket>()

/**
 * The answer to this request is the last on its connection: a request whose
 * body was not read to its end (too large, refused, not JSON, a route that
 * reads none, its deadline spent) — the client still owes body bytes nobody
 * will read, and Node would otherwise read and drop them, however many and
 * however slowly they come, to keep the connection usable — or any answer
 * during a drain. Before the answer's headers: it says `connection: close`,
 * and Node ends the connection after the answer. After them (a stream that
 * said keep-alive, an answer already written): the connection is ended
 * here once the answer is written.
 *
 * Node ends such a connection with `destroySoon()`: FIN, then destroy as
 * soon as the answer is written; with upload bytes still unread, the kernel
 * answers them with a reset, and a client still sending (python's requests
 * and httpx send the whole body before they read) never sees the answer.
 * So, as nginx's lingering close: FIN after the answer, then keep reading
 * and throwing away what the client sends until it stops (its own FIN), for
 * at most `LINGER_MS` or `LINGER_BYTES`, then destroy. A socket closed by
 * the server (a drain's `closeAllConnections`) goes at once.
 */
export function closeAfterAnswer(res: ServerResponse): void {
  // Detached from a finished response (or, pipelined, not given it yet): the request has it.
  const socket = res.socket ?? res.req.socket
  if (!res.headersSent) {
    res.setHeader('connection', 'close')
    if (socket !== null) lastAnswered.add(socket)
  }
  if (socket === null || socket.destroyed || lingering.has(socket)) return
  lingering.add(socket)
  socket.destroySoon = () => linger(socket)
  if (!res.headersSent) return
  // Told keep-alive already: Node would keep the connection open after the
  // answer (and read on whatever body is left), so the close is ours.
  if (res.writableFinished) linger(socket)
  else res.once('finish', () => linger(socket))
}

/**
 * Whether a request arriving now on this connection is behind its last
 * answer: one already said `connection: close` (`closeAfterAnswer` before
 * its headers). A request the client pipelined behind it — parsed from the
 * bytes the lingering close still reads — gets no answer, as Node gives no
 * response queued behind such a one the socket. Served, it did its work (an
 * upstream call, a 200 line) for an answer nobody would send. Not so after an answer that said keep-alive
 * (closed once it is written): one queued behind it and answered by then
 * is written before the close.
 */
export function behindLastAnswer(socket: Socket | null): boolean {
  return socket !== null && lastAnswered.has(socket)
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
  if (ended.has(socket) || socket.destroyed) return
  ended.add(socket)
  if (socket.writable) socket.end()
  const from = socket.bytesRead
  const done = () => {
    clearInterval(check)
    clearTimeout(timer)
  }
  const timer = setTimeout(() => socket.destroy(), LINGER_MS)
  const check = setInterval(() => {
    if (socket.bytesRead - from > LINGER_BYTES) socket.destroy()
  }, CHECK_MS)
  timer.unref()
  check.unref()
  socket.once('close', done)
  // The client is done sending: close once the answer is written (destroy() drops what is still queued).
  const clientDone = () => {
    if (socket.writableFinished) socket.destroy()
    else socket.once('finish', () => socket.destroy())
  }
  if (socket.readableEnded) clientDone()
  else socket.once('end', clientDone)
}
