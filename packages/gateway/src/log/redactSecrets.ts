export const REDACTED = '[redacted]'

/**
 * Levels of objects and arrays walked. Below it, what is left is turned into
 * its JSON text and scrubbed as a string: handed on as it was, a key nested
 * deeper than this reached the log line untouched.
 */
const MAX_DEPTH = 8

/**
 * Returns a function that replaces every occurrence of any secret in a value
 * (deeply, in strings, keys excluded) with `[redacted]`. The gateway already
 * keeps keys out of what it logs; this is the second lock, so a provider that
 * echoes a key in an error message cannot put it in a log line or a response.
 *
 * The copy keeps what JSON (and pino) would have shown of the original: an
 * `Error` stays an error of its class, with its message, stack and cause
 * (copied field by field it would be `{}`, its message and stack not being
 * enumerable), and a value with `toJSON` (a `Date`, a `URL`) is scrubbed as
 * what it serialises to.
 */
export function redactSecrets(secrets: Iterable<string>): <T>(value: T, depth?: number) => T {
  // Longest first, so a key that contains another is replaced whole.
  const list = [...new Set(secrets)]
    .filter((s) => s.length >= 4)
    .sort((a, b) => b.length - a.length)
  if (list.length === 0) return (value) => value
  const scrubString = (text: string): string => {
    let out = text
    for (const secret of list) if (out.includes(secret)) out = out.split(secret).join(REDACTED)
    return out
  }
  const scrub = (value: unknown, depth: number): unknown => {
    if (typeof value === 'string') return scrubString(value)
    if (value === null || typeof value !== 'object') return value
    if (depth > MAX_DEPTH) return scrubString(jsonText(value))
    if (value instanceof Error) return scrubError(value, depth)
    const toJSON = (value as { toJSON?: unknown }).toJSON
    if (typeof toJSON === 'function') return scrub(toJSON.call(value), depth + 1)
    if (Array.isArray(value)) return value.map((v) => scrub(v, depth + 1))
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(value)) out[k] = scrub(v, depth + 1)
    return out
  }
  const scrubError = (error: Error, depth: number): Error => {
    // Same prototype: pino's `err` serializer still names its class, and
    // `instanceof` checks downstream still hold.
    const copy = Object.create(Object.getPrototypeOf(error)) as Record<string, unknown>
    // Own and enumerable, so the message and the stack reach the line under
    // any field name, not only under pino's `err`.
    copy['message'] = scrub(error.message, depth + 1)
    copy['stack'] = scrub(error.stack, depth + 1)
    for (const [k, v] of Object.entries(error)) copy[k] = scrub(v, depth + 1)
    if (error.cause !== undefined) copy['cause'] = scrub(error.cause, depth + 1)
    return copy as unknown as Error
  }
  // `depth`: how deep `value` sits in what is scrubbed (a record's field is at
  // 1), so a record scrubbed field by field is cut at the same depth as whole.
  return <T>(value: T, depth = 0) => scrub(value, depth) as T
}

/** A value's JSON text, for what is nested too deep to walk (cycles and BigInts included). */
function jsonText(value: unknown): string {
  try {
    return JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? String(v) : v))
  } catch {
    return '[unserialisable]'
  }
}
