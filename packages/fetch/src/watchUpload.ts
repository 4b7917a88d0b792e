import { channel } from 'node:diagnostics_channel'
import type { Socket } from 'node:net'
import type { Attempt } from './Attempt.js'

// undici writes a request in one synchronous run (client-h1.js `writeH1`):
// the handler's onConnect, then `undici:client:sendHeaders` with the socket,
// then the body — a Buffer, string or Blob in one `socket.write`, reported
// sent at once. The attempt whose onConnect ran last is the one that message
// is about. It is forgotten a microtask later, so a request that stopped
// before its headers were published (aborted in onConnect) cannot hand a
// later request's socket to it.
const sendHeaders = channel('undici:client:sendHeaders')

let writing: Attempt | undefined
let subscribed = false

/**
 * An attempt whose request has a body is about to be written (its handler's
 * onConnect): hand it the socket it goes out on, so its headers limit can
 * see the upload move (`Attempt.watchSocket`). Only for a body: a request
 * without one is written whole at once. Subscribed from the first upload on
 * and never left: a publish costs undici ~15 ns a request, a subscribe and
 * unsubscribe ~12 µs (Node 20); before any upload undici publishes nothing.
 */
export function watchUpload(attempt: Attempt): void {
  if (!subscribed) {
    subscribed = true
    sendHeaders.subscribe(onSendHeaders)
  }
  writing = attempt
  queueMicrotask(() => {
    if (writing === attempt) writing = undefined
    // A body held in memory was written in that synchronous run: what the
    // socket holds now is where the upload starts from.
    attempt.uploadWritten()
  })
}

function onSendHeaders(message: unknown): void {
  const attempt = writing
  if (attempt === undefined) return
  writing = undefined
  const socket = (message as { socket?: unknown } | null)?.socket
  if (isHttp1Socket(socket)) attempt.watchSocket(socket)
}

/**
 * A socket whose queue is this request's alone. An HTTP/2 session's carries
 * every stream's frames: others moving would keep a stalled stream's limit
 * from firing.
 */
function isHttp1Socket(socket: unknown): socket is Socket {
  if (typeof socket !== 'object' || socket === null) return false
  if (typeof (socket as Socket).writableLength !== 'number') return false
  return (socket as { alpnProtocol?: unknown }).alpnProtocol !== 'h2'
}
