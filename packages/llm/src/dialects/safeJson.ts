/**
 * Reading untrusted provider JSON without trusting it. Only own properties
 * are read (a body with `"__proto__"` or `"constructor"` keys cannot make an
 * inherited value look like a field), nothing is ever merged or assigned, and
 * nothing here throws.
 */

export type JsonRecord = Record<string, unknown>

/**
 * Error bodies longer than this are not parsed as JSON; status and headers
 * still classify them. An error body is the provider's word about a failure
 * — a few hundred bytes when it is what it claims to be — so a longer one is
 * a proxy's page or hostile, and not worth a JSON.parse. An answer is not
 * held to it (`parseAnswerJson`).
 */
export const MAX_JSON_BODY_CHARS = 1024 * 1024

export function parseJson(text: string, maxChars = MAX_JSON_BODY_CHARS): unknown {
  if (typeof text !== 'string' || text.length === 0 || text.length > maxChars) return undefined
  // Only an object or an array, and only one that ends as it began: a body
  // cut short (a proxy's timeout, a dropped connection) or wrapped in
  // anything is known not to parse without JSON.parse throwing, whose
  // SyntaxError (message, stack) costs ~6 µs against ~0.5 µs for a small
  // body that parses. Indexes, not trim(): no copy of a 1 MiB body.
  let first = 0
  while (first < text.length && isJsonSpace(text.charCodeAt(first))) first++
  let last = text.length - 1
  while (last > first && isJsonSpace(text.charCodeAt(last))) last--
  const open = text.charCodeAt(first)
  const close = text.charCodeAt(last)
  if (!((open === 0x7b && close === 0x7d) || (open === 0x5b && close === 0x5d))) return undefined
  try {
    return JSON.parse(text)
  } catch {
    // Invalid JSON and, on very deep nesting, RangeError: both mean "not a JSON body".
    return undefined
  }
}

/** JSON's whitespace: space, tab, line feed, carriage return. */
function isJsonSpace(code: number): boolean {
  return code === 0x20 || code === 0x0a || code === 0x0d || code === 0x09
}

/**
 * A 2xx body (or one stream event after a 200) as JSON: the answer itself,
 * which the provider generated and billed, so never refused for its size —
 * an answer past 1 MiB (a long report, a large tool call) is an answer, and
 * treating it as malformed had it generated, and paid for, again. Its size
 * is bounded before it gets here: an adapter reads at most its
 * `maxResponseBytes` of a body, and one stream event is at most the SSE
 * decoder's `maxBufferChars`.
 */
export function parseAnswerJson(text: string): unknown {
  return parseJson(text, Number.POSITIVE_INFINITY)
}

export function asRecord(value: unknown): JsonRecord | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as JsonRecord)
    : undefined
}

export function asArray(value: unknown): unknown[] {
  return Array.isArray(value) ? value : []
}

/** An own property of an object, or undefined. */
export function get(value: unknown, key: string): unknown {
  const record = asRecord(value)
  return record !== undefined && Object.hasOwn(record, key) ? record[key] : undefined
}

export function getRecord(value: unknown, key: string): JsonRecord | undefined {
  return asRecord(get(value, key))
}

export function getString(value: unknown, key: string): string | undefined {
  const v = get(value, key)
  return typeof v === 'string' ? v : undefined
}

export function getNumber(value: unknown, key: string): number | undefined {
  const v = get(value, key)
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined
}

/** A code that providers send as a string or a number (`336501`, `"336501"`). */
export function getCode(value: unknown, key: string): string | undefined {
  const v = get(value, key)
  if (typeof v === 'string' && v !== '') return v
  if (typeof v === 'number' && Number.isFinite(v)) return String(v)
  return undefined
}
