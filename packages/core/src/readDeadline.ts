import { MAX_TIMER_MS } from './clock.js'
import { describeValue } from './describeValue.js'
import {
  DEADLINE_SOURCES,
  type DeadlineSource,
  ENVOY_TIMEOUT_HEADER,
  GRPC_TIMEOUT_HEADER,
  KNOWN_DEADLINE_SOURCES,
  STAINLESS_TIMEOUT_HEADER,
} from './headerNames.js'
import { holdsHeaders } from './holdsHeaders.js'
import { knownDeadlineSources } from './knownDeadlineSources.js'
import { optionError } from './optionError.js'
import { DEFAULT_INGRESS_MAX_MS } from './resolveIngressOptions.js'
import { trimOws } from './trimOws.js'

/**
 * Anything headers come in: Node's `IncomingHttpHeaders`, a WHATWG `Headers`,
 * a `Map`, or a plain record. Names are matched case-insensitively.
 */
export type HeaderSource =
  | { get(name: string): string | null }
  | ReadonlyMap<string, string | readonly string[] | number | undefined>
  | Readonly<Record<string, string | readonly string[] | number | undefined>>

export interface ReadDeadlineOptions {
  /**
   * Values above this are cut to it (untrusted callers cannot buy more time).
   * Default `DEFAULT_INGRESS_MAX_MS` (30 000), as every ingress. At most
   * 2^31-1 ms, the most a wire value means: a larger one (Infinity: no cap
   * of yours) is that.
   */
  maxMs?: number | undefined
  /** Values below this are raised to it (at most 2^31-1 ms, as `maxMs`). Default 0: a caller with 0 ms left gets 0. */
  minMs?: number | undefined
  /**
   * Which headers to trust. Default: `DEADLINE_SOURCES` (the three deadline
   * headers); `x-stainless-timeout` is read only when listed here. `[]`
   * ignores every inbound deadline.
   */
  sources?: readonly DeadlineSource[] | undefined
  /**
   * The record's names are lower case, as Node's `IncomingMessage.headers`
   * (and http2's) always are: each name is looked up, not matched across
   * every header in any letter case. Default false. For a `Map` too; ignored
   * for any other container with a `get` (a `Headers` matches
   * case-insensitively itself).
   */
  lowerCaseNames?: boolean | undefined
}

export interface InvalidDeadlineHeader {
  header: DeadlineSource
  /** The raw value, cut to 64 characters. */
  value: string
  reason: string
}

export interface ReadDeadlineResult {
  /** The budget in whole ms, or undefined when no valid value arrived (never 0 in that case). */
  ms: number | undefined
  /** The header the budget came from. */
  source: DeadlineSource | undefined
  /** True when the value was cut to `maxMs` (or raised to `minMs`). */
  clamped: boolean
  /** Every header that was present but rejected, and why. */
  invalid: InvalidDeadlineHeader[]
}

// Any number of digits (decimals rounded down, see parseMs): a value too big
// for a timer (or for a double: Infinity) is a far deadline, clamped to maxMs
// like any long budget. A length limit made the size of a number decide
// whether it was refused: `4000000000` was clamped to maxMs, `99999999999`
// listed invalid ('too long') — the ingress fell back to its default budget,
// shorter than either.
const MS_PATTERN = /^([0-9]+)(?:\.[0-9]+)?$/
// Whole or decimal seconds, any number of digits either side: the integer
// part as MS_PATTERN's, decimals past the third (below a millisecond) rounded
// down, as grpc-timeout's u and n are: a float as a language prints it
// (`0.3333333333333333`) was refused as 'too long'.
const SECONDS_PATTERN = /^([0-9]+)(?:\.([0-9]+))?$/

/**
 * The most a value read from the wire means: 2^31-1 ms (about 24.8 days),
 * Node's timer limit and what `writeDeadline` writes at most. Every value
 * read is clamped into `[minMs, maxMs]` and both bounds are cut to this, so
 * `ms` is never more, whatever `maxMs` allows (a local `Deadline` may be
 * longer: it re-arms its timer in steps).
 */
const WIRE_MAX_MS = MAX_TIMER_MS

const GRPC_PATTERN = /^([0-9]{1,8})([HMSmun])$/
const GRPC_UNIT_MS: Record<string, number> = {
  H: 3_600_000,
  M: 60_000,
  S: 1000,
  m: 1,
  u: 1e-3,
  n: 1e-6,
}

/**
 * Read the caller's deadline from request headers. The smallest valid value
 * among the trusted sources wins; decimal ms are rounded down. Never throws
 * for what the headers hold (a negative ms value is a deadline past: 0 ms
 * left): malformed values (empty, non-numeric, repeated or
 * comma-joined; a grpc-timeout of more than 8 digits) are listed in `invalid` with the
 * reason, and so is a header whose read throws (a Proxy, a throwing getter or
 * `get`). `headers` that is not an object at all is a `TypeError`: a bug in
 * the caller, not something a request sent; so is a request or response
 * passed for its headers (`readDeadline(req)`), and an array of them
 * (`req.rawHeaders`).
 */
export function readDeadline(
  headers: HeaderSource,
  options: ReadDeadlineOptions | null = {},
): ReadDeadlineResult {
  if (typeof headers !== 'object' || headers === null) {
    // Else "Cannot read properties of undefined (reading 'get')", naming nothing.
    throw new TypeError(
      `readDeadline: headers must be an object (IncomingHttpHeaders, Headers or a record), got ${describeValue(headers)}`,
    )
  }
  if (Array.isArray(headers)) {
    // `req.rawHeaders`, undici's flat `string[]`, fetch's pairs: read as a
    // record (keys '0', '1', …), no request ever had a deadline, and the
    // ingress fell back to its default budget without a word.
    throw new TypeError(
      'readDeadline: headers must be an object of headers (IncomingHttpHeaders, Headers or a record), not an array (req.headers, not req.rawHeaders)',
    )
  }
  if (holdsHeaders(headers)) {
    // `readDeadline(req)`: read as a record, it found no deadline header on
    // any request, and every caller got the default budget without a word.
    throw new TypeError(
      'readDeadline: headers must be the headers themselves (req.headers), got an object that holds them (a request or response)',
    )
  }
  // `null` reads as no options (it crashed reading `null.maxMs`).
  options ??= {}
  // An inbound budget is untrusted: left out, the cap is every ingress's
  // (30 s), not 2^31-1 ms — a direct caller that passed none trusted any
  // caller's 24 days.
  // A floor above that cap, with no cap given, raises the cap: "values
  // below minMs are raised to it" holds for a caller that passed only minMs.
  // `null` is no cap given, as every ingress reads it (`maxMs ?? default`):
  // floored as a number, it cut every inbound budget to 0 ms — every
  // request expired on arrival.
  const givenMax = options.maxMs == null ? undefined : msOption('maxMs', options.maxMs, 0)
  const givenMin = msOption('minMs', options.minMs, 0)
  // Compared as given, before the wire's limit below: cut to it first, a
  // minMs of 4e9 over a maxMs of 3e9 (both 2^31-1 then) passed unremarked.
  if (givenMax !== undefined && givenMin > givenMax) {
    // Clamped into an empty range, a value came back below the floor the
    // caller asked for (maxMs won), without a word.
    throw new RangeError(
      `readDeadline: minMs (${String(options.minMs)}) must not be more than maxMs (${String(options.maxMs)})`,
    )
  }
  // No wire value means more than 2^31-1 ms (see `WIRE_MAX_MS`): a larger
  // bound, Infinity included ("no cap of mine", as otel's propagator passes
  // it), is that limit. What came of it is in the result: `ms`, `clamped`.
  const askedMin = Math.min(givenMin, WIRE_MAX_MS)
  const maxMs =
    givenMax === undefined
      ? Math.max(DEFAULT_INGRESS_MAX_MS, askedMin)
      : Math.min(givenMax, WIRE_MAX_MS)
  const minMs = Math.min(askedMin, maxMs)
  const sources = options.sources ?? DEADLINE_SOURCES
  if (!Array.isArray(sources)) {
    // A string was searched as text: 'x-deadline-remaining-ms' trusted that
    // header and any name it happens to contain.
    throw optionError('readDeadline: sources', 'an array of header names', sources)
  }
  const trusted =
    sources === DEADLINE_SOURCES ? sources : knownDeadlineSources(sources, 'readDeadline: sources')
  const invalid: InvalidDeadlineHeader[] = []
  let best: number | undefined
  let source: DeadlineSource | undefined
  for (const header of KNOWN_DEADLINE_SOURCES) {
    if (!trusted.includes(header)) continue
    let raw: string | readonly string[] | undefined
    try {
      raw = getHeader(headers, header, options.lowerCaseNames === true)
    } catch {
      // The container's own read threw (a Proxy trap, a getter, a `get` or a
      // value's toString): unreadable, listed like any other bad value. Thrown
      // on, it crashed the ingress (or the propagator) that asked. The error
      // itself is not kept: it may quote anything the container held.
      invalid.push({ header, value: '', reason: 'unreadable (reading it threw)' })
      continue
    }
    if (raw === undefined) continue
    const parsed =
      header === GRPC_TIMEOUT_HEADER
        ? parseGrpcTimeout(raw)
        : header === STAINLESS_TIMEOUT_HEADER
          ? parseSeconds(raw)
          : header === ENVOY_TIMEOUT_HEADER
            ? parseEnvoyMs(raw)
            : parseMs(raw)
    if (parsed === undefined) continue // well-formed, and no deadline (see parseSeconds, parseEnvoyMs)
    if (typeof parsed === 'string') {
      invalid.push({ header, value: preview(raw), reason: parsed })
      continue
    }
    if (best === undefined || parsed < best) {
      best = parsed
      source = header
    }
  }
  if (best === undefined) return { ms: undefined, source: undefined, clamped: false, invalid }
  const ms = Math.min(Math.max(best, minMs), maxMs)
  return { ms, source, clamped: ms !== best, invalid }
}

/** Parse `x-deadline-remaining-ms`-style values: ms, decimals rounded down, a negative one 0. Returns the reason on failure. */
function parseMs(raw: string | readonly string[]): number | string {
  if (typeof raw !== 'string') return 'repeated header'
  const value = trimOws(raw)
  if (value === '') return 'empty'
  if (value.includes(',')) return 'repeated header (comma-joined values)'
  // A negative value is a deadline already past (a client that sends
  // `deadline - now` as it is, once it has gone by): 0 ms left, as it is.
  // Refused as malformed, it fell back to the ingress's default budget — a
  // whole budget of work for a caller whose own had run out.
  const negative = value.startsWith('-')
  const match = MS_PATTERN.exec(negative ? value.slice(1) : value)
  if (match === null) return 'not a number'
  if (negative) return 0
  // Decimal ms (`1500.5`: a client that sends `deadline - performance.now()`
  // as it is; `1500.0`: a float as Python prints it) are rounded down, as
  // grpc-timeout's u and n are: never grant more than was given. Refused as
  // malformed, they fell back to the ingress's default budget — longer than
  // the caller asked (2 s, or 30 s, for a caller with 1.5 s), the one answer
  // an untrusted value must never get.
  // Past 2^31-1 ms is still a caller's deadline, a far one: clamped to maxMs
  // below like any other long budget (so is one past what a double holds,
  // read as Infinity). Refused, it fell back to the ingress's default: a
  // longer caller deadline got a shorter budget (or a 400).
  return Number(match[1])
}

/**
 * Parse `x-envoy-expected-rq-timeout-ms`: whole ms, as `parseMs`, except 0,
 * which is no deadline (undefined). Envoy takes a timeout of 0 as none at
 * all: its router never sends 0 (out of time, it sends 1), and an Envoy
 * that respects the header reads 0 as "infinite". Read as 0 ms left, a
 * caller speaking Envoy's convention got a 504 on arrival.
 */
function parseEnvoyMs(raw: string | readonly string[]): number | string | undefined {
  const ms = parseMs(raw)
  // 0 itself, not a fraction of a ms rounded down to it: that is 0 ms left.
  return ms === 0 && Number(trimOws(raw as string)) === 0 ? undefined : ms
}

/**
 * Parse `x-stainless-timeout`: seconds, whole (`600`, as openai-node sends)
 * or decimal (`1.5`, at most 3 decimals). A whole number N ≥ 1 is read as
 * the most the client's timer can be, N + 1 s less 1 ms: the Stainless SDKs
 * (openai-node, Anthropic's) send `Math.trunc(ms / 1000)`, so `timeout:
 * 1900` arrives as `1`, and read as exactly 1000 ms a server answered 504
 * 900 ms before the client would have given up (its fallback never tried).
 * Read this way a server never gives up before its client does; a client
 * that gives up first stops the work by hanging up. A decimal value is
 * exact (a Python SDK's `1.9`). 0 is no deadline (undefined): `0` is a
 * timeout under a second, not "no time left" (a client with `timeout: 500`
 * must not get a 504 at once). Not read as a 999 ms bound either: that
 * bound never fires before the client's own timer, whose hang-up stops the
 * work, and the ingresses (express, grpc, otel) document 0 as no deadline.
 * Nor is it malformed: listed as invalid, `strict` answered every such SDK
 * call 400, and every server reported it as a bad header.
 */
function parseSeconds(raw: string | readonly string[]): number | string | undefined {
  if (typeof raw !== 'string') return 'repeated header'
  const value = trimOws(raw)
  if (value === '') return 'empty'
  if (value.includes(',')) return 'repeated header (comma-joined values)'
  if (value.startsWith('-')) return 'negative'
  const match = SECONDS_PATTERN.exec(value)
  if (!match) return 'not a number of seconds'
  // Whole ms, rounded down: never grant more than was given.
  const ms = Number(match[1]) * 1000 + Number((match[2] ?? '').slice(0, 3).padEnd(3, '0'))
  // 0 itself (`0`, `0.0`) is no deadline; a decimal under a millisecond,
  // rounded down to 0, is an exact timeout: 0 ms left, as Envoy's `0.4` is.
  // Read as no deadline, `0.0004` got the whole default budget where the
  // longer `0.001` got 1 ms.
  if (ms === 0) return match[2] !== undefined && /[1-9]/.test(match[2]) ? 0 : undefined
  // Truncated to whole seconds: the client's timer is in [N, N + 1) s.
  return match[2] === undefined ? ms + 999 : ms
}

/** Parse gRPC's `TimeoutValue TimeoutUnit` (1–8 digits, unit H M S m u n, case-sensitive). */
function parseGrpcTimeout(raw: string | readonly string[]): number | string {
  if (typeof raw !== 'string') return 'repeated header'
  const value = trimOws(raw)
  if (value === '') return 'empty'
  if (value.includes(',')) return 'repeated header (comma-joined values)'
  const match = GRPC_PATTERN.exec(value)
  if (!match) {
    // The one length limit of the codec: gRPC's grammar says TimeoutValue is
    // at most 8 digits (grpc-js's own parser reads 8 at most), a rule of the
    // format, not of size: `99999999H` is already some 11,000 years, clamped
    // to maxMs.
    return /^[0-9]{9,}[HMSmun]$/.test(value)
      ? 'more than 8 digits'
      : 'not a grpc-timeout (1-8 digits and H, M, S, m, u or n)'
  }
  // Sub-millisecond remainders round down: never grant more than was given.
  // Past 2^31-1 ms (grpc-js sends `2592000S` for a 30-day deadline) is
  // clamped to maxMs like any long budget, not refused.
  return Math.floor(Number(match[1]) * (GRPC_UNIT_MS[match[2] as string] as number))
}

function getHeader(
  headers: HeaderSource,
  name: string,
  lowerCase: boolean,
): string | readonly string[] | undefined {
  if (headers instanceof Map) {
    // A Map's keys are as the caller spelled them, like a record's.
    if (lowerCase) return headerValue(headers.get(name))
    return headerValue(everySpelling(headers.keys(), (key) => headers.get(key), name))
  }
  if (typeof (headers as { get?: unknown }).get === 'function') {
    // Any other `get` (a `Headers` matches in any letter case itself).
    return headerValue((headers as { get(name: string): unknown }).get(name))
  }
  const record = headers as Readonly<Record<string, unknown>>
  if (lowerCase) return headerValue(Object.hasOwn(record, name) ? record[name] : undefined)
  return headerValue(everySpelling(Object.keys(record), (key) => record[key], name, record))
}

/**
 * The value of every key that spells `name` in some letter case. Two
 * spellings are the one header sent twice (names are case-insensitive on the
 * wire): both values come back, as Node hands a repeated header, and are
 * refused as one. Reading only the first spelling let the other, perhaps the
 * smaller, go unseen.
 */
function everySpelling(
  keys: Iterable<unknown>,
  read: (key: string) => unknown,
  name: string,
  record?: Readonly<Record<string, unknown>>,
): unknown {
  // The exact name first, also when not enumerable (what a lookup found).
  let value: unknown =
    record !== undefined && Object.hasOwn(record, name) ? record[name] : undefined
  let values: unknown[] | undefined
  for (const key of keys) {
    if (typeof key !== 'string' || key.length !== name.length) continue
    if (record !== undefined && key === name) continue // read above
    if (key.toLowerCase() !== name) continue
    const other = read(key)
    if (other === undefined || other === null) continue
    if (value === undefined || value === null) value = other
    else {
      values ??= [value]
      values.push(other)
    }
  }
  return values === undefined ? value : values.flat()
}

/** A header's value as the parsers take it: a string, or the values of a repeated header. */
function headerValue(value: unknown): string | readonly string[] | undefined {
  if (value === undefined || value === null) return undefined
  if (typeof value === 'number') return numberText(value)
  if (typeof value === 'string') return value
  if (Array.isArray(value)) {
    // One value is the header sent once, a number as a string: `[500]` was
    // refused as a repeated header where `['500']` read 500.
    if (value.length === 1 && typeof value[0] === 'number') return numberText(value[0])
    return value.length === 1 && typeof value[0] === 'string' ? value[0] : value.map(String)
  }
  return String(value)
}

/**
 * A number as the digits a header would carry. String() writes a whole
 * number from 1e21 up in exponent form ('1e+21'), refused as 'not a number'
 * where the same value sent as digits is a far deadline, clamped to maxMs.
 * A fraction > 0 is its decimal text, never an exponent (String(1e-7) is
 * '1e-7'): read as that text is — ms rounded down, Envoy's 0.5 0 ms left
 * (not its "no timeout", which is 0 itself), `x-stainless-timeout`'s 1.5 s
 * as 1500 ms (not whole seconds). NaN, Infinity and negative fractions keep
 * String()'s text: a negative number reads as 0 ms left, the others are
 * refused.
 */
function numberText(value: number): string {
  if (Number.isInteger(value)) return BigInt(value).toString()
  const text = String(value)
  // String() is the shortest text that reads back as the value (0.3, not
  // toFixed's 0.29999999999999998890, which `x-stainless-timeout` read as
  // 299 ms); its exponent form, below 1e-6, is written out.
  return Number.isFinite(value) && value > 0 && text.includes('e') ? value.toFixed(20) : text
}

/** A `maxMs` or `minMs` checked and floored to whole ms; not yet cut to the wire's limit. */
function msOption(name: string, value: number | null | undefined, fallback: number): number {
  // `null` is none given, as `maxMs` above reads it (Math.floor(null) is 0).
  if (value === undefined || value === null) return fallback
  if (typeof value !== 'number' || Number.isNaN(value)) {
    // A `maxMs` read from an unset environment variable (`Number(undefined)`)
    // lifted the cap on an untrusted budget to 2^31-1 ms without a word.
    throw optionError(`readDeadline: ${name}`, 'a number of ms', value)
  }
  if (value < 0) {
    // A negative maxMs cut every inbound budget to 0 ms: every request
    // answered as expired on arrival, and nothing said why.
    throw optionError(`readDeadline: ${name}`, 'a number of ms ≥ 0', value)
  }
  return Math.floor(value)
}

function preview(raw: string | readonly string[]): string {
  const text = typeof raw === 'string' ? raw : raw.join(', ')
  return text.length > 64 ? `${text.slice(0, 64)}…` : text
}
