import { DEADLINE_HEADER, type Deadline, writeDeadline } from '@hourglass/core'
import type { Dispatcher } from 'undici'

type Headers = Dispatcher.DispatchOptions['headers']

/**
 * A copy of undici dispatch headers (record, flat array, or iterable of
 * pairs) with any inbound `x-deadline-remaining-ms` replaced by what is left
 * now. Returns the header value written (undefined when none).
 */
export function withDeadlineHeader(
  headers: Headers,
  deadline: Deadline | undefined,
): { headers: Record<string, string | string[]>; headerMs: number | undefined } {
  const out: Record<string, string | string[]> = {}
  const add = (name: string, value: unknown) => {
    const key = name.toLowerCase()
    if (key === DEADLINE_HEADER || value === undefined || value === null) return
    const text = Array.isArray(value) ? value.map(String) : String(value)
    const prev = out[key]
    out[key] = prev === undefined ? text : ([] as string[]).concat(prev, text)
  }
  if (Array.isArray(headers)) {
    for (let i = 0; i + 1 < headers.length; i += 2) add(String(headers[i]), headers[i + 1])
  } else if (headers && typeof (headers as Iterable<unknown>)[Symbol.iterator] === 'function') {
    for (const pair of headers as Iterable<[string, unknown]>) add(pair[0], pair[1])
  } else if (headers) {
    for (const [name, value] of Object.entries(headers)) add(name, value)
  }
  const headerMs = writeDeadline(out as Record<string, string>, deadline)
  return { headers: out, headerMs }
}

/** True when the request may be sent twice without changing the outcome. */
export function isRepeatable(method: string, headers: Record<string, string | string[]>): boolean {
  return IDEMPOTENT.has(method.toUpperCase()) || headers['idempotency-key'] !== undefined
}

const IDEMPOTENT = new Set(['GET', 'HEAD', 'PUT', 'DELETE', 'OPTIONS', 'TRACE'])

/**
 * Whether fetch-style `init.headers` (a `Headers`, an array of pairs or a
 * record) carry `name` (lower case), without copying them into a new
 * `Headers` — this runs on every call.
 */
export function hasHeader(headers: unknown, name: string): boolean {
  if (!headers || typeof headers !== 'object') return false
  if (typeof (headers as { has?: unknown }).has === 'function') {
    return (headers as { has(n: string): boolean }).has(name)
  }
  if (Array.isArray(headers)) {
    return headers.some((pair) => Array.isArray(pair) && String(pair[0]).toLowerCase() === name)
  }
  return Object.keys(headers).some((key) => key.toLowerCase() === name)
}
