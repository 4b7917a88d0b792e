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
 * else is returned unchanged, at the cost of an `instanceof` and a few
 * property reads (a URL string or a `URL` costs no more). A promise only for
 * a Request whose body is read first: one made from a string, bytes, a Blob,
 * URLSearchParams or a FormData (see `takeBody`).
 */
export function adoptRequest(
  input: FetchInput,
  initHasBody = false,
): RequestInfo | Promise<UndiciRequest> {
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
  if (body === null) return new UndiciRequest(foreign.url, init)
  const taken = takeBody(foreign)
  if (taken !== undefined) {
    // Made from a string, bytes, a Blob, a form: sent as fetch sends it,
    // with its Content-Length, and again after a 307/308 — as the bytes
    // fetch would send, under the Content-Type that names them (a form's
    // boundary among them). The Request reads as used, as fetch leaves it.
    return taken.arrayBuffer().then((bytes) => {
      init.body = new Uint8Array(bytes)
      return new UndiciRequest(foreign.url, init)
    })
  }
  // Otherwise its body is a web ReadableStream, the same class in both: sent
  // as a stream, chunked, as fetch sends it (so, like any Request with a
  // body, the call is never retried), through a reader the call can stop.
  const upload = stoppableBody(body)
  init.body = (upload?.body ?? body) as unknown as NonNullable<RequestInit['body']>
  init.duplex = 'half'
  const request = new UndiciRequest(foreign.url, init)
  if (upload) uploads.set(request, upload)
  return request
}

/** What `takeBody` builds its Request with. */
const NO_CORS = { method: 'POST', mode: 'no-cors', cache: 'default', signal: null } as const

/**
 * Node's own `Request` over `request`'s body when that body was made from
 * a string, bytes, a Blob, URLSearchParams or a FormData (a body with a
 * "source", which fetch sends with its length); undefined for one made from
 * a stream, or a Request of another class. Its `body` reads as a stream
 * whatever it was made from, and only the Request's internal state knows
 * its source (private in undici 7, Node 24) — but the fetch spec's Request
 * constructor tells: building a Request from one whose body has no source
 * in a mode other than "same-origin" or "cors" throws a TypeError, before
 * the body is touched (its step "if inputOrInitBody's source is null");
 * any other body it takes over, the given Request left used. Public
 * behaviour, the same in undici 6 (Node 20, 22) and 7 (Node 24). POST and
 * the default cache so that "no-cors" refuses nothing else (a PUT, an
 * "only-if-cached"); no signal: the Request rebuilt from the bytes follows
 * the caller's.
 */
function takeBody(request: globalThis.Request): globalThis.Request | undefined {
  const NodeRequest = globalThis.Request
  if (typeof NodeRequest !== 'function' || !(request instanceof NodeRequest)) return undefined
  try {
    return new NodeRequest(request, NO_CORS)
  } catch {
    return undefined
  }
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
