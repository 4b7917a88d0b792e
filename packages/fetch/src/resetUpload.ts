import type { Http2Stream } from 'node:http2'
import { addAbortSignal } from 'node:stream'

const noop = (): void => {}

/**
 * An HTTP/2 request stream whose upload was cut short, reset with
 * RST_STREAM(CANCEL) alone while its sending side is still open, so the
 * server reads an aborted request (its stream's `rstCode` is 8), never the
 * part it received as the whole body. undici's abort closes the stream with
 * NO_ERROR, and its writer, once the body it reads is done, sends
 * END_STREAM: a Node server reads either as the request's end (`rstCode`
 * 0). `close(NGHTTP2_CANCEL)` would not do: Node ends the sending side
 * first, so END_STREAM goes out ahead of the reset, and a server that has
 * answered already closes the stream as complete before the reset comes.
 * Destroyed with an abort (an aborted signal, the public way to Node's
 * `AbortError`), Node sends the reset alone, with CANCEL. A stream that
 * sent its body whole (END_STREAM written) or is closed already is left as
 * it is.
 */
export function resetUpload(stream: Http2Stream): void {
  if (stream.writableEnded || stream.closed || stream.destroyed) return
  // The abort is ours: the stream's 'error' (ABORT_ERR) tells its request
  // nothing new (undici has its answer, or has failed it already).
  stream.once('error', noop)
  addAbortSignal(AbortSignal.abort(), stream)
}
