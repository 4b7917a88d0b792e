import {
  DEADLINE_HEADER,
  type Deadline,
  GRPC_TIMEOUT_HEADER,
  grpcTimeoutValue,
  KNOWN_DEADLINE_SOURCES,
  writeDeadline,
} from '@hourglass/core'
import type { Dispatcher } from 'undici'

type Headers = Dispatcher.DispatchOptions['headers']

/**
 * undici dispatch headers with any `x-deadline-remaining-ms` of the
 * caller's (often an inbound one copied along, stale by now) replaced by
 * what is left now. Under a deadline that writes none (`never()`, a passed
 * observe-only one with nothing enforcing above it) the caller's is dropped
 * and none is sent, as the gRPC client does: a call exempted with `never()`
 * was cut by the next hop to that stale budget, and a dark-mode deadline
 * made the next hop answer 504. The other deadline sources a server reads
 * (`grpc-timeout`, Envoy's `x-envoy-expected-rq-timeout-ms`, an SDK's
 * `x-stainless-timeout`: `isDeadlineSource`) go the same way under a
 * deadline, whether or not ours is written: a handler forwarding its
 * inbound headers (`fetch(url, { headers: req.headers, deadline })`) sent
 * its edge's Envoy route timeout on, which a Hourglass server trusts by
 * default and takes when smallest, so a call exempted with `never()`, or
 * given 20 s, was cut by the next hop to the edge's 300 ms. A caller's
 * `grpc-timeout` is not dropped but rewritten when ours is written: what is
 * left, in gRPC's format (`grpcTimeoutValue`). A gRPC-web client's own (or
 * one forwarded to a gRPC server) is the only deadline that server reads:
 * dropped, the call reached it with none at all. With no
 * deadline at all (none given, none current) the caller's go out as given
 * (an iterable of pairs as a record of them, below), as they would without
 * us — `probe`'s and the CLI's `-H` included. Runs on every attempt: no
 * lower-casing or copying of a name that cannot be a source (see
 * `isDeadlineSource`), nothing more done for a call given no headers.
 * The caller's shape is kept where a layer beneath may read it: a record
 * comes out a record (see `withOurs`), a flat array a flat array; an
 * iterable of pairs (a Map, a Headers, a generator) comes out a record of
 * the same headers, ours or not (see `pairsAsRecord`): as a flat array,
 * undici's retry resume spread it into numbered headers.
 * Names and values are passed on as given, read as undici reads them (a
 * record's own keys; an iterable only where undici takes one): undici
 * checks them, so a value it refuses (an object) is refused and `null`
 * goes out empty, as without us — converted to strings here, `{}` went
 * out as "[object Object]" and `null` was dropped. Shapes undici refuses
 * (a string, an odd array, a pair of three, a name that is no string) are
 * returned as they are, for undici to refuse: read here, they went out with no headers at all.
 * Returns the header value written (undefined when none).
 */
export function withDeadlineHeader(
  headers: Headers,
  deadline: Deadline | undefined,
): { headers: NonNullable<Headers>; headerMs: number | undefined } {
  const headerMs = deadline ? remainingHeader(deadline) : undefined
  // The caller's deadline headers are dropped under any deadline, whether or not ours is written.
  const drop = deadline !== undefined
  if (isRecord(headers)) {
    // Values as given (undici checks them), so typed as undici's record only here.
    return { headers: withOurs(headers, headerMs, drop) as NonNullable<Headers>, headerMs }
  }
  if (headers == null && headerMs !== undefined) {
    // A record, as for pairs (below): a flat array spread by undici's retry
    // interceptor into its resume (`{ ...headers, range }`) sent headers
    // named `0` and `1`, and no deadline.
    return { headers: { [DEADLINE_HEADER]: String(headerMs) }, headerMs }
  }
  if (headers && typeof headers === 'object' && !Array.isArray(headers)) {
    // An iterable of pairs (a record went above).
    const record = pairsAsRecord(headers as Iterable<unknown>, headerMs, drop)
    if (record === undefined) return { headers, headerMs: undefined }
    if (record !== REPEATS_SINGLE) return { headers: record as NonNullable<Headers>, headerMs }
  }
  const out: unknown[] = []
  let grpc = false
  if (headers && typeof headers === 'object' && !Array.isArray(headers)) {
    // Pairs that name a header undici takes one value of more than once: as
    // undici reads them, one at a time (an array of values it refuses).
    for (const pair of headers as Iterable<[unknown, unknown]>) {
      if (push(out, pair[0], pair[1], drop)) grpc = true
    }
  } else if (Array.isArray(headers)) {
    if (headers.length % 2 !== 0) {
      // Not a flat [name, value, …] array (odd: a name without its value, or
      // [name, value] pairs): undici refuses it, and must still — dropping
      // the odd one out would send the request without that header.
      return { headers, headerMs: undefined }
    }
    for (let i = 0; i + 1 < headers.length; i += 2) {
      if (push(out, headers[i], headers[i + 1], drop)) grpc = true
    }
  } else if (headers != null) {
    return { headers: headers as never, headerMs: undefined }
  }
  if (headerMs !== undefined) {
    out.push(DEADLINE_HEADER, String(headerMs))
    if (grpc) out.push(GRPC_TIMEOUT_HEADER, grpcTimeoutValue(headerMs))
  }
  return { headers: out as string[], headerMs }
}

/**
 * An iterable of pairs as a record of the same headers, ours set (when
 * `headerMs` is given) and any caller's deadline source (ours or another's),
 * in any letter case, left out (when `drop`: under a deadline). A record, as for a record given: undici's retry interceptor
 * resumes a broken body with `{ ...headers, range }`, which spreads a flat
 * array into numbered headers (the credential under a header named "1"),
 * and a Map or a Headers into nothing. Done whether or not there is a
 * header of ours: that resume meets the headers either way. A name given twice (exactly
 * so; not one of `SINGLE_VALUED`, whose pairs stay pairs) becomes one array of its values, which undici sends as it sent the
 * pairs, a line each; an undefined value is skipped, as undici skips it.
 * Undefined (the caller's iterable is then sent as it is, for undici to
 * refuse) when an item is not a pair or a name not a string: undici throws
 * on those, and must still.
 */
function pairsAsRecord(
  headers: Iterable<unknown>,
  headerMs: number | undefined,
  drop: boolean,
): Record<string, unknown> | typeof REPEATS_SINGLE | undefined {
  const out: Record<string, unknown> = {}
  let grpc = false
  for (const pair of headers) {
    if (!Array.isArray(pair) || pair.length !== 2) return undefined
    const name: unknown = pair[0]
    const value: unknown = pair[1]
    if (typeof name !== 'string') return undefined
    if (value === undefined) continue
    if (drop && isDeadlineSource(name)) {
      if (isGrpcTimeout(name)) grpc = true
      continue
    }
    if (!Object.hasOwn(out, name)) setOwn(out, name, value)
    else if (SINGLE_VALUED.has(name.toLowerCase())) return REPEATS_SINGLE
    else setOwn(out, name, [...asList(out[name]), ...asList(value)])
  }
  if (headerMs !== undefined) writeOurs(out, headerMs, grpc)
  return out
}

/** Ours into a fresh record: `x-deadline-remaining-ms`, and `grpc-timeout` where the caller sent one (`grpc`). */
function writeOurs(out: Record<string, unknown>, headerMs: number, grpc: boolean): void {
  out[DEADLINE_HEADER] = String(headerMs)
  if (grpc) out[GRPC_TIMEOUT_HEADER] = grpcTimeoutValue(headerMs)
}

/** A deadline source's name (`isDeadlineSource`) that is `grpc-timeout`, in any letter case: the one rewritten, not dropped. */
function isGrpcTimeout(name: string): boolean {
  return name.length === GRPC_TIMEOUT_HEADER.length && isNameIgnoringCase(name, GRPC_TIMEOUT_HEADER)
}

/**
 * Headers undici refuses an array of values for (`connection` must be one
 * string, `content-type` becomes the request's content type, …), though it
 * takes each given once per pair: a pair repeating one is not merged (see
 * `pairsAsRecord`): `invalid connection header` where undici alone sent it.
 */
const SINGLE_VALUED = new Set([
  'connection',
  'content-type',
  'content-length',
  'host',
  'transfer-encoding',
  'keep-alive',
  'upgrade',
  'expect',
])

/** `pairsAsRecord`'s answer for pairs repeating a `SINGLE_VALUED` name. */
const REPEATS_SINGLE = Symbol('repeats a single-valued header')

/** A header value as the list of values undici sends for it (an array is one already). */
function asList(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [value]
}

/** `SOURCES_BY_LENGTH[n]`: the deadline sources a server reads (`KNOWN_DEADLINE_SOURCES`, ours among them) `n` characters long, lower case. */
const SOURCES_BY_LENGTH: (string[] | undefined)[] = Array.from(
  { length: Math.max(...KNOWN_DEADLINE_SOURCES.map((name) => name.length)) + 1 },
  () => undefined,
)
for (const name of KNOWN_DEADLINE_SOURCES) {
  const sameLength = SOURCES_BY_LENGTH[name.length]
  if (sameLength) sameLength.push(name)
  else SOURCES_BY_LENGTH[name.length] = [name]
}

/**
 * A deadline source's name, in any letter case: ours, `grpc-timeout`,
 * `x-envoy-expected-rq-timeout-ms`, `x-stainless-timeout`. By length first
 * (no two share one today), then letter by letter, stopping at the first that
 * differs: a name of no source's length costs one read, as the length test
 * that dropped the caller's `x-deadline-remaining-ms` alone did, and no
 * name is lower-cased (a string made per name per attempt).
 */
function isDeadlineSource(name: string): boolean {
  const sources =
    name.length < SOURCES_BY_LENGTH.length ? SOURCES_BY_LENGTH[name.length] : undefined
  if (sources === undefined) return false
  for (let i = 0; i < sources.length; i++) {
    if (isNameIgnoringCase(name, sources[i] as string)) return true
  }
  return false
}

/** `name` is `lower` (a lower-case name of the same length) in any ASCII letter case, as HTTP compares names. */
function isNameIgnoringCase(name: string, lower: string): boolean {
  for (let i = 0; i < lower.length; i++) {
    const want = lower.charCodeAt(i)
    const got = name.charCodeAt(i)
    if (got !== want && !(want >= 0x61 && want <= 0x7a && got === want - 0x20)) return false
  }
  return true
}

/** `record[name] = value`, where a name `__proto__` (JSON.parse makes one) is a key: an assignment to it sets the prototype. */
function setOwn(record: Record<string, unknown>, name: string, value: unknown): void {
  if (name === '__proto__') {
    Object.defineProperty(record, name, {
      value,
      enumerable: true,
      writable: true,
      configurable: true,
    })
  } else record[name] = value
}

/** Headers undici reads as a record: an object that is neither an array nor an iterable it takes. */
function isRecord(headers: Headers): headers is Record<string, unknown> & Headers {
  return (
    typeof headers === 'object' &&
    headers !== null &&
    !Array.isArray(headers) &&
    !hasSafeIterator(headers)
  )
}

/**
 * A record stays a record: a layer beneath may read it as one — undici's
 * retry interceptor resumes a broken body with `{ ...headers, range }`,
 * which spread a flat array into numbered headers (`1: Bearer t`, the
 * credential under a header named "1"). As given when there is nothing of
 * ours to write and nothing to drop (no deadline, or no deadline source of
 * the caller's under one that writes none); else one copy of its own keys
 * (as undici reads a record) with ours set, if any, and every deadline
 * source of the caller's (`isDeadlineSource`), in any letter case, left out. Copied key by key: a spread (`{ ...record }`)
 * took ~1 µs on Node 20, ten times this loop, on every attempt.
 */
function withOurs(
  record: Record<string, unknown>,
  headerMs: number | undefined,
  drop: boolean,
): Record<string, unknown> {
  if (headerMs === undefined && !(drop && holdsDeadlineSource(record))) return record
  const out: Record<string, unknown> = {}
  let grpc = false
  const names = Object.keys(record)
  for (let i = 0; i < names.length; i++) {
    const name = names[i] as string
    if (isDeadlineSource(name)) {
      // One whose value is undefined is not sent (undici skips it): none to rewrite.
      if (record[name] !== undefined && isGrpcTimeout(name)) grpc = true
      continue
    }
    // An assignment to `__proto__` sets the prototype: that one is defined.
    if (name === '__proto__') {
      Object.defineProperty(out, name, {
        value: record[name],
        enumerable: true,
        writable: true,
        configurable: true,
      })
    } else out[name] = record[name]
  }
  if (headerMs !== undefined) writeOurs(out, headerMs, grpc)
  return out
}

/** A record's own key naming a deadline source, in any letter case (for-in: no array of its keys made). */
function holdsDeadlineSource(record: Record<string, unknown>): boolean {
  for (const name in record) {
    if (isDeadlineSource(name) && Object.hasOwn(record, name)) return true
  }
  return false
}

/**
 * Dispatch headers that can be read more than once: an iterator that is
 * its own iterable (`map.entries()`, a generator) is read once, here, into
 * an iterable of its pairs — still pairs, so undici checks (and refuses)
 * them as it would have. Every attempt reads the headers again, as does
 * the retry decision (an `Idempotency-Key`): read from the iterator itself,
 * the first send used it up — a key in it was not seen, and a retry went
 * out with no headers at all. Anything else is returned as it is.
 */
export function rereadableHeaders(headers: Headers): Headers {
  if (!headers || typeof headers !== 'object' || Array.isArray(headers)) return headers
  if (!hasSafeIterator(headers)) return headers
  const iterable = headers as Iterable<unknown>
  if ((iterable[Symbol.iterator]() as unknown) !== iterable) return headers
  const pairs = Array.from(iterable)
  return { [Symbol.iterator]: () => pairs[Symbol.iterator]() } as Headers
}

/**
 * Dispatch headers as they are when the request is dispatched, for every
 * attempt and the retry rules to read: a record copied (its own keys, as
 * undici reads one), a flat array copied, an iterable of pairs (a `Map`, a
 * `Headers`) read into pairs of its own — each as undici reads it, so what
 * it refuses it still refuses. undici reads them once, at dispatch; each
 * retry read the caller's object again: one reused for the next request
 * (`headers['x-item'] = next`, then `request(url, { headers, … })`
 * unawaited) had a retry sent with the next request's headers.
 */
export function takenHeaders(headers: Headers): Headers {
  if (!headers || typeof headers !== 'object') return headers
  if (Array.isArray(headers)) return headers.map(copyValue) as Headers
  if (hasSafeIterator(headers)) {
    const rereadable = rereadableHeaders(headers)
    // A one-shot iterator: read into pairs of its own already.
    if (rereadable !== headers) return rereadable
    // Each pair copied, and its values with it: a value array the caller
    // changes after dispatch reached the retry (a record's did not).
    const pairs = Array.from(headers as Iterable<unknown>, (pair) =>
      Array.isArray(pair) ? pair.map(copyValue) : pair,
    )
    return { [Symbol.iterator]: () => pairs[Symbol.iterator]() } as Headers
  }
  const record = headers as Record<string, unknown>
  const out: Record<string, unknown> = {}
  const names = Object.keys(record)
  for (let i = 0; i < names.length; i++) {
    const name = names[i] as string
    setOwn(out, name, copyValue(record[name]))
  }
  return out as Headers
}

/** An array (a header's values, a pair) copied; anything else as it is. */
function copyValue(value: unknown): unknown {
  return Array.isArray(value) ? value.slice() : value
}

/** undici's own test (core/util.js): an iterable it reads as pairs, not a record that inherits one. */
function hasSafeIterator(headers: object): boolean {
  const prototype: unknown = Object.getPrototypeOf(headers)
  return (
    Object.hasOwn(headers, Symbol.iterator) ||
    (prototype != null &&
      prototype !== Object.prototype &&
      typeof (headers as Partial<Iterable<unknown>>)[Symbol.iterator] === 'function')
  )
}

/**
 * `dropDeadline`: under a deadline the caller's deadline sources never go
 * (ours, if any, is sent instead: a repeated value is invalid to a reader,
 * another source a stale one). True when the one dropped is `grpc-timeout`,
 * which ours is then written as.
 */
function push(out: unknown[], name: unknown, value: unknown, dropDeadline: boolean): boolean {
  // undici skips an undefined value (and sends null as empty).
  if (value === undefined) return false
  if (dropDeadline && typeof name === 'string' && isDeadlineSource(name)) return isGrpcTimeout(name)
  out.push(name, value)
  return false
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
  if (headers && typeof headers === 'object' && hasSafeIterator(headers)) {
    for (const pair of headers as Iterable<[string, unknown]>) {
      if (String(pair[0]).toLowerCase() === name && hasValue(pair[1])) return true
    }
    return false
  }
  if (!headers) return false
  const record = headers as Record<string, unknown>
  // Own keys, as undici reads a record: an inherited one is not sent.
  for (const key of Object.keys(record)) {
    if (key.toLowerCase() === name && hasValue(record[key])) return true
  }
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
  const like = headers as { [Symbol.toStringTag]?: unknown; get?: unknown }
  if (like[Symbol.toStringTag] === 'Headers' && typeof like.get === 'function') {
    return hasValue((headers as { get(n: string): string | null }).get(name))
  }
  // Any other iterable is what fetch reads it as, a sequence of pairs (a
  // Map too: its get() is case-sensitive, and found no 'Idempotency-Key').
  if (typeof (headers as Partial<Iterable<unknown>>)[Symbol.iterator] === 'function') {
    for (const pair of headers as Iterable<unknown>) {
      if (Array.isArray(pair) && String(pair[0]).toLowerCase() === name && hasValue(pair[1])) {
        return true
      }
    }
    return false
  }
  const record = headers as Record<string, unknown>
  return Object.keys(record).some((key) => key.toLowerCase() === name && hasValue(record[key]))
}
