import type { ServerResponse } from 'node:http'
import type { Duplex } from 'node:stream'

/**
 * The response Node is writing on `socket`, if a request was handed over
 * and is not yet answered: Node sets it when a response takes the socket
 * and clears it when that response finishes, and its own `clientError`
 * handler reads the same field. Read here rather than tracked per request
 * (a set and a `close` listener on every response, for a failure that
 * almost never comes).
 */
export function responseOn(socket: Duplex): ServerResponse | undefined {
  return (socket as { _httpMessage?: ServerResponse | null })._httpMessage ?? undefined
}

/**
 * Calls `write` once every answer before it on `socket` is out (Node hands
 * the socket to the next queued answer before the last one's `close`), or
 * destroys the socket if one of them closed the connection. A refusal of a
 * request pipelined behind one still being answered (a CONNECT, a request
 * the parser could not read), written at once, went out as that request's
 * answer, and the close that follows it cut the real one. `claim`: a
 * response the caller answers itself when its turn comes (true), instead
 * of waiting for it.
 */
export function inTurn(
  socket: Duplex,
  write: () => void,
  claim?: (answering: ServerResponse) => boolean,
): void {
  const answering = responseOn(socket)
  if (answering !== undefined) {
    // One the caller answers itself instead (its own body broken: it will
    // never complete, so never close on its own).
    if (claim?.(answering) === true) return
    answering.once('close', () => inTurn(socket, write, claim))
    return
  }
  if (socket.writable) write()
  else socket.destroy()
}
