import {
  type RequestInfo,
  type RequestInit,
  type FormData as UndiciFormData,
  Headers as UndiciHeaders,
  Request as UndiciRequest,
} from 'undici'
import { adoptFormData } from './adoptFormData.js'
import { type StoppableBody, stoppableBody } from './stoppableBody.js'

/** The stoppable body of each Request rebuilt here (see `adoptedUpload`). */
const uploads = new WeakMap<UndiciRequest, StoppableBody>()

/** The form each Request rebuilt here sends (see `adoptedForm`). */
const forms = new WeakMap<UndiciRequest, UndiciFormData>()

/**
 * The foreign Request each one rebuilt here follows, kept alive as long as
 * the rebuilt one is. Node's Request follows the caller's signal through a
 * WeakRef to an AbortController only that Request holds (undici's design,
 * nodejs/undici#3644): once rebuilt, nothing held it, the next GC collected
 * it, and the caller's abort no longer reached the call, which ran on to its
 * answer (or timed out and was sent again, the caller gone).
 */
const followed = new WeakMap<UndiciRequest, object>()

/**
 * The form a `Request` rebuilt by `adoptRequest` was made with (undici's
 * Request keeps its body's source out of reach): createFetch sends it again
 * with a boundary its Content-Type names after a 307/308 (`formResent`).
 */
export function adoptedForm(request: UndiciRequest): UndiciFormData | undefined {
  return forms.get(request)
}

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
  const source = body === null ? undefined : bodySourceOf(foreign)
  let headers = foreign.headers as unknown as NonNullable<RequestInit['headers']>
  if (isForeignFormData(source) && NODE_FORM_TYPE.test(foreign.headers.get('content-type') ?? '')) {
    // Rebuilt, the form gets a boundary of its own: the type that named the
    // old one must go, or the server split the body on a boundary it lacks.
    const own = new UndiciHeaders(headers)
    own.delete('content-type')
    headers = own
  }
  const init: RequestInit & { duplex?: 'half' } = {
    method: foreign.method,
    headers,
    signal: foreign.signal,
    redirect: foreign.redirect,
    // Its cache mode: fetch sends `pragma` / `cache-control: no-cache` for
    // `no-store` and `reload` (`cache-control: max-age=0` for `no-cache`).
    // Left behind, such a Request went out as a plain one, answerable from
    // a proxy's or CDN's cache.
    cache: foreign.cache,
    keepalive: foreign.keepalive,
    integrity: foreign.integrity,
    referrer: foreign.referrer,
    referrerPolicy: foreign.referrerPolicy,
  }
  // Its mode only with `only-if-cached`, which a Request refuses under any
  // mode but `same-origin`. Else it is left behind, as it always was: a
  // `no-cors` one made a cross-origin redirect's answer an opaque status 0
  // (a 503 hidden), a `same-origin` one refused it with a bare Error.
  if (foreign.cache === 'only-if-cached') init.mode = foreign.mode
  if (source !== undefined && body !== null) {
    // What it was made from (a string, bytes, a Blob, a form): sent as
    // fetch sends it, with its Content-Length, and again after a 307/308.
    // Its stream is left unread: cancelled, so that the Request reads as
    // used, as fetch leaves it.
    const adopted = adoptFormData(source)
    init.body = adopted as NonNullable<RequestInit['body']>
    body.cancel().catch(() => {})
    const request = new UndiciRequest(foreign.url, init)
    followed.set(request, foreign)
    if (adopted !== source) forms.set(request, adopted as UndiciFormData)
    return request
  }
  // Otherwise its body is a web ReadableStream, the same class in both: sent
  // as a stream (so, like any Request with a body, the call is never
  // retried), through a reader the call can stop.
  const upload = body === null ? undefined : stoppableBody(body)
  if (body !== null) {
    init.body = (upload?.body ?? body) as unknown as NonNullable<RequestInit['body']>
    init.duplex = 'half'
  }
  const request = new UndiciRequest(foreign.url, init)
  followed.set(request, foreign)
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

/** The Content-Type Node's fetch gives a FormData body (undici's extractBody). */
const NODE_FORM_TYPE = /^multipart\/form-data; boundary=----formdata-undici-0\d{11}$/

/**
 * What a foreign Request's body was made from when it is not a stream: a
 * string (URLSearchParams are one by then), bytes, a Blob or a FormData.
 * Only a Request's internal state knows it (its `body` is a stream whatever
 * it was made from), and that is reachable only where Node's copy of undici
 * keeps it under a symbol (`Symbol(state)`, undici 6: Node 20 and 22).
 * Undefined elsewhere (a private field in later versions) and for a stream:
 * the body is then sent as the stream it reads as, without a length.
 */
function bodySourceOf(request: object): string | Uint8Array | Blob | FormData | undefined {
  const key = Object.getOwnPropertySymbols(request).find((s) => s.description === 'state')
  if (key === undefined) return undefined
  const body = (request as Record<symbol, { body?: { source?: unknown } | null } | undefined>)[key]
    ?.body
  const source = body?.source
  if (typeof source === 'string' || source instanceof Uint8Array || source instanceof Blob) {
    return source
  }
  return isForeignFormData(source) ? source : undefined
}

function isForeignFormData(value: unknown): value is FormData {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { [Symbol.toStringTag]?: unknown })[Symbol.toStringTag] === 'FormData'
  )
}
