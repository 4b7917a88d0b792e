import type { ServerResponse } from 'node:http'
import type { InvalidDeadlineHeader } from '@hourglass/core'
import { dropBodyHeaders } from './dropBodyHeaders.js'

/** `strict: true`: a malformed deadline is the caller's bug; say which header and why, nothing more. */
export function writeInvalid(
  res: ServerResponse,
  method: string | undefined,
  invalid: readonly InvalidDeadlineHeader[],
): void {
  const body = JSON.stringify({
    error: 'invalid_deadline_header',
    invalid: invalid.map(({ header, reason }) => ({ header, reason })),
  })
  // Headers first: on a response a middleware ahead already started they
  // throw, and the status it did send is left as it was (the end event reads it).
  // What a middleware ahead set for a body of its own goes (a declared
  // `Trailer` made Node throw on this one, which has a length), as for the
  // 504 — before this answer's own, `cache-control` among them.
  dropBodyHeaders(res, false)
  res.setHeader('content-type', 'application/json; charset=utf-8')
  res.setHeader('content-length', Buffer.byteLength(body))
  res.setHeader('cache-control', 'no-store')
  res.statusCode = 400
  // No body for a HEAD (see writeExpired).
  if (method === 'HEAD') res.end()
  else res.end(body)
}
