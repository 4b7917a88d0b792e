import type { ServerResponse } from 'node:http'
import { DEADLINE_EXPIRED_HEADER } from '@hourglass/core'
import { isHttp2 } from './isHttp2.js'

/**
 * A started stream the deadline ends (an SSE feed, a chunked body) left
 * its head on the wire as `200`: its caller read a complete, shorter body —
 * or, after a `flushHeaders()` with nothing written, an empty `200` — that
 * it could not tell from a whole answer. The one place left to say it is
 * the trailer section its last chunk carries: `x-deadline-expired: 1`
 * (undici's `request()` gives it as `trailers`). Hourglass defines the
 * field, so sending it in a trailer is its own to permit (RFC 9110 §6.5.1).
 * Only where a trailer can go: a chunked HTTP/1 body (Node drops one on any
 * other), or an HTTP/2 stream (its compat response sends what
 * `addTrailers` gathered). Trailers the handler added stay: Node's
 * `addTrailers` replaces them, so ours is appended to what it stored.
 * Called before the late writers are swallowed: `addTrailers` is the
 * original.
 */
export function markCutInTrailer(res: ServerResponse, method: string | undefined): void {
  if (method === 'HEAD') return
  if (isHttp2(res)) {
    // Merged into the trailers gathered so far.
    res.addTrailers({ [DEADLINE_EXPIRED_HEADER]: '1' })
    return
  }
  if (!res.chunkedEncoding) return
  const out = res as ServerResponse & { _trailer?: unknown }
  const stored = typeof out._trailer === 'string' ? out._trailer : ''
  if (stored === '') res.addTrailers({ [DEADLINE_EXPIRED_HEADER]: '1' })
  else out._trailer = `${stored}${DEADLINE_EXPIRED_HEADER}: 1\r\n`
}
