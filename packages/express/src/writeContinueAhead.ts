import type { ServerResponse } from 'node:http'
import { headStoredOnly } from './writeExpired.js'

/**
 * Write `100 Continue` for a client holding its body back, ahead of a head
 * the handler stored with `writeHead()` and has not sent (Node sends it
 * with the first body byte, so the 100 still comes first on the wire, as
 * HTTP requires). A streaming route that writes its head before piping the
 * body through got no 100: its client held the body back and the route
 * ended in a 504 at its deadline. Node 24 refuses any interim head once a
 * head is stored (`ERR_HTTP_HEADERS_SENT`, thrown into the route's read of
 * the body), Node 20 writes it: the stored head is set aside for the call
 * and put back. A content coding chosen for it (`compression` ahead, a
 * route gzipping the upload back) changes nothing: its bytes come after.
 * Nothing once the response has started (a 100 after it would corrupt the
 * stream), or a 100 went out already.
 */
export function writeContinueAhead(res: ServerResponse): void {
  const out = res as ServerResponse & { _header?: unknown; _sent100?: boolean }
  if (out._sent100 === true) return
  if (!res.headersSent) {
    res.writeContinue()
    return
  }
  if (!headStoredOnly(res)) return
  const head = out._header
  out._header = null
  try {
    res.writeContinue()
  } finally {
    out._header = head
  }
}
