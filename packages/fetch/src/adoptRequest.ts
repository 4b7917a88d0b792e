import { type RequestInfo, type RequestInit, Request as UndiciRequest } from 'undici'
import { type StoppableBody, stoppableBody } from './stoppableBody.js'

/** The stoppable body of each Request rebuilt here (see `adoptedUpload`). */
const uploads = new WeakMap<UndiciRequest, StoppableBody>()

/**
 * The body of a `Request` rebuilt by `adoptRequest`, which the call stops
 * reading once it has ended (see stoppableBody); undefined for any other
 * input (undici's own Request is read by undici as it is).
 */
export function adoptedUpload(request: UndiciRequest): StoppableBody | undefined {
  return uploads.get(request)
}

/** What `createFetch`'s fetch takes: undici's inputs, or Node's global `Request`. */
export type FetchInput = RequestInfo | globalThis.Request

/**
 * A `Request` made by another fetch implementation — above all Node's global
 * `Request`, which comes from the copy of undici bundled with Node, a class
 * npm's undici does not recognise — rebuilt as undici's own. Given as it is,
 * undici's fetch took it for a string ("[object Request]") and failed with
 * "Invalid URL": the first `new Request(...)` a Node user writes. Anything
 * else is returned unchanged.
 */
export function adoptRequest(input: FetchInput, initHasBody = false): RequestInfo {
  const foreign: unknown = input
  if (input instanceof UndiciRequest || !isRequestLike(foreign)) return input as RequestInfo
  // Its body is sent only when the init brings none, as fetch reads a Request:
  // then a body already read is refused in fetch's words (reading it here
  // failed with "Response body object should not be disturbed or locked");
  // else it is left alone, unread and unlocked, for the caller.
  const body = initHasBody ? null : foreign.body
  if (body !== null && (foreign.bodyUsed || body.locked)) {
    throw new TypeError(
      'Cannot construct a Request with a Request object that has already been used.',
    )
  }
  const init: RequestInit & { duplex?: 'half' } = {
    method: foreign.method,
    headers: foreign.headers as unknown as NonNullable<RequestInit['headers']>,
    signal: foreign.signal,
    redirect: foreign.redirect,
    keepalive: foreign.keepalive,
    integrity: foreign.integrity,
    referrer: foreign.referrer,
    referrerPolicy: foreign.referrerPolicy,
  }
  // Its body is a web ReadableStream, the same class in both: sent as a
  // stream (so, like any Request with a body, the call is never retried),
  // through a reader the call can stop.
  const upload = body === null ? undefined : stoppableBody(body)
  if (body !== null) {
    init.body = (upload?.body ?? body) as unknown as NonNullable<RequestInit['body']>
    init.duplex = 'half'
  }
  const request = new UndiciRequest(foreign.url, init)
  if (upload) uploads.set(request, upload)
  return request
}

/** Enough of the WHATWG Request interface to rebuild one from it (a URL has no method). */
function isRequestLike(value: unknown): value is globalThis.Request {
  if (typeof value !== 'object' || value === null || value instanceof URL) return false
  const r = value as Partial<Record<keyof globalThis.Request, unknown>>
  return (
    typeof r.url === 'string' &&
    typeof r.method === 'string' &&
    typeof r.headers === 'object' &&
    r.headers !== null &&
    typeof r.clone === 'function' &&
    'body' in r
  )
}
