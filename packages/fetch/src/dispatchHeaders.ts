import { DEADLINE_HEADER, type Deadline, writeDeadline } from '@hourglass/core'
import type { Dispatcher } from 'undici'

type Headers = Dispatcher.DispatchOptions['headers']

/**
 * undici dispatch headers (record, flat array, or iterable of pairs) as a
 * flat `[name, value, …]` array — the form undici reads fastest — with any
 * `x-deadline-remaining-ms` of the caller's (often an inbound one copied
 * along, stale by now) replaced by what is left now. Only replaced: with no
 * header of ours to send (no deadline, `never()`, a passed observe-only
 * one) the caller's goes out as given, as it would without us — `probe`'s
 * and the CLI's `-H` included. Runs on every attempt: no lower-casing or
 * copying of a name that cannot be ours.
 * Returns the header value written (undefined when none).
 */
export function withDeadlineHeader(
  headers: Headers,
  deadline: Deadline | undefined,
): { headers: string[]; headerMs: number | undefined } {
  const out: string[] = []
  // Worked out first: whether the caller's header is dropped depends on it.
  const headerMs = deadline ? remainingHeader(deadline) : undefined
  const ours = headerMs !== undefined
  if (Array.isArray(headers)) {
    if (headers.length % 2 !== 0) {
      // Not a flat [name, value, …] array (odd: a name without its value, or
      // [name, value] pairs): undici refuses it, and must still — dropping
      // the odd one out would send the request without that header.
      return { headers: headers as string[], headerMs: undefined }
    }
    for (let i = 0; i + 1 < headers.length; i += 2) push(out, headers[i], headers[i + 1], ours)
  } else if (headers && typeof (headers as Iterable<unknown>)[Symbol.iterator] === 'function') {
    for (const pair of headers as Iterable<[string, unknown]>) push(out, pair[0], pair[1], ours)
  } else if (headers) {
    const record = headers as Record<string, unknown>
    for (const name in record) push(out, name, record[name], ours)
  }
  if (ours) out.push(DEADLINE_HEADER, String(headerMs))
  return { headers: out, headerMs }
}

/** `dropDeadline`: ours is sent instead, so the caller's must not go too (a repeated value is invalid to a reader). */
function push(out: string[], name: unknown, value: unknown, dropDeadline: boolean): void {
  if (value === undefined || value === null) return
  const key = String(name)
  if (
    dropDeadline &&
    key.length === DEADLINE_HEADER.length &&
    key.toLowerCase() === DEADLINE_HEADER
  ) {
    return
  }
  if (Array.isArray(value)) for (const item of value) out.push(key, String(item))
  else out.push(key, String(value))
}

/** What `writeDeadline` would write: whole ms left, none for `never()` or a passed observe-only deadline. */
function remainingHeader(deadline: Deadline): number | undefined {
  const holder: Record<string, string> = {}
  return writeDeadline(holder, deadline)
}

/**
 * True when undici dispatch headers carry `name` (lower case) with a value,
 * whatever their form. A name whose value is undefined, null or empty is
 * not sent (undici skips undefined) or carries nothing: it does not count.
 */
export function dispatchHasHeader(headers: Headers, name: string): boolean {
  if (Array.isArray(headers)) {
    for (let i = 0; i + 1 < headers.length; i += 2) {
      if (String(headers[i]).toLowerCase() === name && hasValue(headers[i + 1])) return true
    }
    return false
  }
  if (headers && typeof (headers as Iterable<unknown>)[Symbol.iterator] === 'function') {
    for (const pair of headers as Iterable<[string, unknown]>) {
      if (String(pair[0]).toLowerCase() === name && hasValue(pair[1])) return true
    }
    return false
  }
  if (!headers) return false
  const record = headers as Record<string, unknown>
  for (const key in record) if (key.toLowerCase() === name && hasValue(record[key])) return true
  return false
}

/** A header value that says something: not undefined, null, empty or blank (nor a list of those). */
function hasValue(value: unknown): boolean {
  if (value === undefined || value === null) return false
  if (Array.isArray(value)) return value.some(hasValue)
  return String(value).trim() !== ''
}

/**
 * A dispatch body held whole in memory (none, a string, bytes): it can be sent
 * again, and undici connects for it during `dispatch` — a stream or iterable
 * is neither.
 */
export function isBodyInMemory(body: unknown): boolean {
  return body == null || typeof body === 'string' || body instanceof Uint8Array
}

/**
 * A dispatch body undici turns into bytes afresh for every request it
 * writes, so a retry can send it again: one held in memory, any other
 * ArrayBuffer or view of one, a Blob (read again through `stream()` or
 * `arrayBuffer()`), a FormData (encoded again). Recognised by their tag, as
 * undici does, so another realm's or copy's Blob and FormData count too.
 */
export function isBodyReplayable(body: unknown): boolean {
  if (isBodyInMemory(body) || body instanceof ArrayBuffer || ArrayBuffer.isView(body)) return true
  if (typeof body !== 'object' || body === null) return false
  const like = body as Record<PropertyKey, unknown>
  // A stream first, as undici checks it first: the `form-data` package's
  // object is tagged 'FormData' but is a one-shot stream, sent as one (a
  // retry of it sent nothing and waited out the headers limit).
  if (typeof like['pipe'] === 'function' && typeof like['on'] === 'function') return false
  const tag = like[Symbol.toStringTag]
  if (tag === 'Blob' || tag === 'File') {
    return typeof like['stream'] === 'function' || typeof like['arrayBuffer'] === 'function'
  }
  // undici's own test of a FormData (util.isFormDataLike): the methods, not just the tag.
  return tag === 'FormData' && FORM_DATA_METHODS.every((name) => typeof like[name] === 'function')
}

const FORM_DATA_METHODS = ['append', 'delete', 'get', 'getAll', 'has', 'set', 'keys'] as const

/**
 * True when the request may be sent twice without changing the outcome.
 * `method` as it goes on the wire, where methods are case-sensitive: undici
 * sends `get` as `get`, which is not GET (a server may refuse it, or route
 * it anywhere), so it is not taken for one. fetch's normalised methods are
 * upper case already (`fetchMethod`).
 */
export function isRepeatable(method: string, hasIdempotencyKey: boolean): boolean {
  return IDEMPOTENT.has(method) || hasIdempotencyKey
}

const IDEMPOTENT = new Set(['GET', 'HEAD', 'PUT', 'DELETE', 'OPTIONS', 'TRACE'])

/**
 * Whether fetch-style `init.headers` (a `Headers`, an array of pairs or a
 * record) carry `name` (lower case) with a value, without copying them into
 * a new `Headers`. An empty value is no value: `Idempotency-Key: ` is not a
 * key, nor is a record's undefined (which fetch would send as "undefined").
 */
export function hasHeader(headers: unknown, name: string): boolean {
  if (!headers || typeof headers !== 'object') return false
  if (typeof (headers as { get?: unknown }).get === 'function') {
    return hasValue((headers as { get(n: string): string | null }).get(name))
  }
  if (Array.isArray(headers)) {
    return headers.some(
      (pair) => Array.isArray(pair) && String(pair[0]).toLowerCase() === name && hasValue(pair[1]),
    )
  }
  const record = headers as Record<string, unknown>
  return Object.keys(record).some((key) => key.toLowerCase() === name && hasValue(record[key]))
}
