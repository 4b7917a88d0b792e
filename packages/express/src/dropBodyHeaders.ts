import type { ServerResponse } from 'node:http'

// Headers a handler may have set for the body it meant to send; on an
// answer to its deadline they would lie (a gzip label on plain JSON, a stale
// validator, a download, a checksum of other bytes that a client verifying
// digests rejects).
const STALE_HEADERS = [
  'content-encoding',
  'content-range',
  'content-disposition',
  'content-language',
  'content-location',
  'content-md5',
  'content-digest',
  'repr-digest',
  'digest',
  'etag',
  'last-modified',
  'transfer-encoding',
  // Trailers it declared for its streamed body (`Trailer: Server-Timing`):
  // Node throws ERR_HTTP_TRAILER_INVALID for a declared trailer on a body
  // with a Content-Length, as the 504 has — from the deadline's timer, an
  // uncaught exception that took the process down, no answer sent.
  'trailer',
  // A handler's caching of the body it meant to send (`public, max-age=…`)
  // let a CDN keep the deadline's answer for the next callers; the plain
  // 504 says `no-store`, and `respond` sets its own if it wants one.
  'cache-control',
  'expires',
  // A cache's own word, which it takes over `cache-control` (and so over
  // the 504's `no-store`): a CDN's `Surrogate-Control` (Fastly, Akamai,
  // Varnish), nginx's `X-Accel-Expires`, and the targeted fields of RFC
  // 9213 (`CDN-Cache-Control`, ending in `-cache-control`: see
  // `dropBodyHeaders`). Left on, a handler's `CDN-Cache-Control:
  // max-age=600` had the CDN serve the 504 to the next callers for 10 min.
  'surrogate-control',
  'x-accel-expires',
  // Where it chose to send the caller (`res.location()` before the work that
  // ran out): a 504 naming that target says the request went somewhere it
  // never got, and a browser follows `Refresh` on any status. Cookies, CORS
  // and `Vary` stay: finalhandler, Express's own error answer, keeps them
  // (it removes only content-encoding, -language and -range), and a browser
  // denied the CORS header reads the 504 as a network error.
  'location',
  'refresh',
]

const TARGETED_CACHE_SUFFIX = '-cache-control'

/**
 * Remove what a handler set on a response not sent yet for the body it meant
 * to send, before another body (the 504, or `respond`'s) takes its place.
 * `typeAndLength` also drops `content-type` and `content-length`: Express's
 * `res.json`/`res.send` keep a type already set (a JSON error went out as
 * `text/event-stream`), and a raw `res.end(body)` keeps a stale length (the
 * client waits for bytes that never come). The plain 504 sets both itself.
 */
export function dropBodyHeaders(res: ServerResponse, typeAndLength: boolean): void {
  // Node remembers a removed `Content-Length` or `Transfer-Encoding` as the
  // app's wish for neither (`_removedContLen`, `_removedTE`, set even when
  // none was there), and frames a body written without them by closing the
  // connection. Removed here, they left every answer that sets no length
  // itself — `respond`'s `res.end(body)`, or any 504 a `compression()` ahead
  // gzips (it removes the length) — with no framing at all: read to the
  // close, under a `Connection: keep-alive` that was not kept, a new
  // connection for every 504. Ours is no such wish, and a handler's own
  // (a proxy stripping hop-by-hop fields) was about its body, which the
  // answer replaces, as the fields themselves are dropped: both cleared.
  const out = res as ServerResponse & { _removedContLen?: unknown; _removedTE?: unknown }
  for (const name of STALE_HEADERS) res.removeHeader(name)
  // RFC 9213's targeted cache fields are named `<target>-Cache-Control` by
  // convention, one per CDN (`Cloudflare-CDN-Cache-Control`,
  // `Vercel-CDN-Cache-Control`, …): no list names them all. A header of
  // that name that is none still described the handler's own body.
  for (const name of res.getHeaderNames()) {
    if (name.endsWith(TARGETED_CACHE_SUFFIX)) res.removeHeader(name)
  }
  if (typeAndLength) {
    res.removeHeader('content-type')
    res.removeHeader('content-length')
  }
  // HTTP/2's compat response keeps no such marks: nothing to clear.
  if (typeof out._removedContLen === 'boolean') out._removedContLen = false
  if (typeof out._removedTE === 'boolean') out._removedTE = false
}
