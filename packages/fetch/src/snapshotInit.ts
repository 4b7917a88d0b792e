import { type RequestInit, FormData as UndiciFormData, Headers as UndiciHeaders } from 'undici'
import { copiedForm } from './adoptFormData.js'

/**
 * The members undici's fetch reads of a `RequestInit` (its WebIDL
 * dictionary, `dispatcher` included), read as it reads them: by `[[Get]]`,
 * so a member inherited from a prototype counts, and `undefined` is absent.
 */
const REQUEST_INIT_KEYS = [
  'method',
  'headers',
  'body',
  'referrer',
  'referrerPolicy',
  'mode',
  'credentials',
  'cache',
  'redirect',
  'integrity',
  'keepalive',
  'signal',
  'window',
  'duplex',
  'dispatcher',
] as const

/**
 * The init every attempt of a call sends, taken when the call is made, as
 * fetch takes it (its `new Request(input, init)` reads them then): a copy
 * of the caller's members, with `body` and `headers` as the call sends
 * them. Each attempt read the caller's own object again: a loop that reused
 * one init and one headers record (`init.body = item`, `headers['x-id'] =
 * id`, then `fetch(url, init)` without awaiting) had every retry sent with
 * the last item's method, body and headers, its caller answered for
 * another item's write.
 */
export function snapshotInit(given: object, body: unknown, headers: unknown): RequestInit {
  // Its own members first, a member a later undici reads among them; then
  // those this one reads, an inherited one too.
  const init = Object.assign({}, given) as Record<string, unknown>
  const members = given as Record<string, unknown>
  for (const key of REQUEST_INIT_KEYS) {
    const value = key === 'body' ? body : key === 'headers' ? headers : members[key]
    if (value !== undefined) init[key] = value
  }
  return init as RequestInit
}

/**
 * Headers taken when the call is made, as fetch takes them into its
 * Request's header list: a `Headers` of their own (undici's, read by its
 * own `HeadersInit` rules — a record's own keys, enumerable or not; an
 * undici `Headers`' names in the case and order given), which the caller's
 * record, `Headers` or pairs changed afterwards do not reach. Headers undici
 * would refuse are returned as given, for its fetch to refuse in its own
 * words. Not the interceptor's copy (takenHeaders): a dispatch reads a
 * record by its enumerable keys and keeps no `Headers` casing.
 */
export function snapshotHeaders<T>(headers: T): T | UndiciHeaders {
  if (headers === undefined || headers === null) return headers
  try {
    return new UndiciHeaders(headers as ConstructorParameters<typeof UndiciHeaders>[0])
  } catch {
    return headers
  }
}

/**
 * A form body taken when the call is made, as fetch extracts it then: a
 * `URLSearchParams` or undici's `FormData` copied (its files are the same
 * Blobs, not read), so a retry sends the form the call was made with. Each
 * attempt extracted the caller's object again: one reused for the next call
 * (`form.set('file', next)`, then `fetch(url, { method: 'POST', body: form })`
 * unawaited) had a retry — a fast connect failure's, of any method — send
 * the next call's form. Any other body is returned as it is.
 */
export function snapshotBody<T>(body: T): T | URLSearchParams | UndiciFormData {
  if (body instanceof URLSearchParams) return new URLSearchParams(body)
  if (body instanceof UndiciFormData) return copiedForm(body)
  return body
}
