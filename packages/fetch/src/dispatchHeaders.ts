import { DEADLINE_HEADER, type Deadline, writeDeadline } from '@hourglass/core'
import type { Dispatcher } from 'undici'

type Headers = Dispatcher.DispatchOptions['headers']

/**
 * undici dispatch headers (record, flat array, or iterable of pairs) as a
 * flat `[name, value, …]` array — the form undici reads fastest — with any
 * inbound `x-deadline-remaining-ms` replaced by what is left now. Runs on
 * every attempt: no lower-casing or copying of a name that cannot be ours.
 * Returns the header value written (undefined when none).
 */
export function withDeadlineHeader(
  headers: Headers,
  deadline: Deadline | undefined,
): { headers: string[]; headerMs: number | undefined } {
  const out: string[] = []
  if (Array.isArray(headers)) {
    for (let i = 0; i + 1 < headers.length; i += 2) push(out, headers[i], headers[i + 1])
  } else if (headers && typeof (headers as Iterable<unknown>)[Symbol.iterator] === 'function') {
    for (const pair of headers as Iterable<[string, unknown]>) push(out, pair[0], pair[1])
  } else if (headers) {
    const record = headers as Record<string, unknown>
    for (const name in record) push(out, name, record[name])
  }
  const headerMs = deadline ? remainingHeader(deadline) : undefined
  if (headerMs !== undefined) out.push(DEADLINE_HEADER, String(headerMs))
  return { headers: out, headerMs }
}

function push(out: string[], name: unknown, value: unknown): void {
  if (value === undefined || value === null) return
  const key = String(name)
  if (key.length === DEADLINE_HEADER.length && key.toLowerCase() === DEADLINE_HEADER) return
  if (Array.isArray(value)) for (const item of value) out.push(key, String(item))
  else out.push(key, String(value))
}

/** What `writeDeadline` would write: whole ms left, none for `never()` or a passed observe-only deadline. */
function remainingHeader(deadline: Deadline): number | undefined {
  const holder: Record<string, string> = {}
  return writeDeadline(holder, deadline)
}

/** True when undici dispatch headers carry `name` (lower case), whatever their form. */
export function dispatchHasHeader(headers: Headers, name: string): boolean {
  if (Array.isArray(headers)) {
    for (let i = 0; i + 1 < headers.length; i += 2) {
      if (String(headers[i]).toLowerCase() === name) return true
    }
    return false
  }
  if (headers && typeof (headers as Iterable<unknown>)[Symbol.iterator] === 'function') {
    for (const pair of headers as Iterable<[string, unknown]>) {
      if (String(pair[0]).toLowerCase() === name) return true
    }
    return false
  }
  if (!headers) return false
  for (const key in headers as Record<string, unknown>) if (key.toLowerCase() === name) return true
  return false
}

/**
 * A dispatch body held whole in memory (none, a string, bytes): it can be sent
 * again, and undici connects for it during `dispatch` — a stream or iterable
 * is neither.
 */
export function isBodyInMemory(body: unknown): boolean {
  return body == null || typeof body === 'string' || body instanceof Uint8Array
}

/** True when the request may be sent twice without changing the outcome. */
export function isRepeatable(method: string, hasIdempotencyKey: boolean): boolean {
  return IDEMPOTENT.has(method.toUpperCase()) || hasIdempotencyKey
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
