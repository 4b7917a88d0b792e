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
    // undici's words quote the whole value ("Headers.append: \"Bearer sk-…\n…\"
    // is an invalid header value."): a credential with a line break in it
    // (a key file of two lines) went into the error, its message and stack.
    // Named by its header instead, the value left out, as a URL's password is.
    const name = headerWithForbiddenValue(headers)
    if (name !== undefined) {
      throw new TypeError(
        `headers[${JSON.stringify(name)}]: its value holds a character no HTTP header value may (a line break or NUL); the value is not shown, as it may be a credential`,
      )
    }
    return headers
  }
}

/** What undici refuses in a header value once its ends are trimmed: CR, LF, NUL. */
const FORBIDDEN_IN_VALUE = /[\0\r\n]/

/** The name of the first header whose value fetch would refuse for `FORBIDDEN_IN_VALUE`, if any. */
function headerWithForbiddenValue(headers: unknown): string | undefined {
  let pairs: unknown[]
  try {
    pairs =
      typeof (headers as Iterable<unknown>)[Symbol.iterator] === 'function'
        ? [...(headers as Iterable<unknown>)]
        : Object.entries(headers as object)
  } catch {
    return undefined
  }
  for (const pair of pairs) {
    if (!Array.isArray(pair) || pair.length !== 2) continue
    const [name, value] = pair as [unknown, unknown]
    if (typeof value !== 'string') continue
    if (FORBIDDEN_IN_VALUE.test(trimHttpWhitespace(value))) return String(name)
  }
  return undefined
}

/**
 * Fetch's header value normalisation: HTTP whitespace (tab, LF, CR, space)
 * off both ends, a pass from each (a regex's `[…]+$` is quadratic on a run
 * of inner spaces).
 */
function trimHttpWhitespace(value: string): string {
  const white = (code: number) => code === 0x20 || code === 0x09 || code === 0x0a || code === 0x0d
  let start = 0
  let end = value.length
  while (start < end && white(value.charCodeAt(start))) start++
  while (end > start && white(value.charCodeAt(end - 1))) end--
  return value.slice(start, end)
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
