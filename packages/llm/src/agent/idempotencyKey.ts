import { createHash } from 'node:crypto'

/**
 * A stable key for one operation: the SHA-256 (base64url, 43 characters) of
 * the canonical JSON of `parts` — object keys sorted at every depth, so
 * `{ a, b }` and `{ b, a }` give the same key. Build it from what identifies
 * the operation, e.g. `{ conversationId, turn, tool: 'send_email', args }`.
 *
 * It must not depend on the attempt: the point is that attempt 2 of the same
 * operation finds attempt 1's result. A top-level part named like `attempt`
 * is refused with a `TypeError` for that reason.
 */
export function idempotencyKey(parts: Readonly<Record<string, unknown>>): string {
  for (const name of Object.keys(parts)) {
    if (/^(attempt|retry|try)/i.test(name)) {
      throw new TypeError(
        `idempotencyKey: "${name}" looks like an attempt counter; a key derived from the attempt makes every retry a new operation`,
      )
    }
  }
  return createHash('sha256').update(canonicalJson(parts)).digest('base64url')
}

/**
 * JSON with object keys sorted at every depth (JSON's own rules otherwise:
 * `undefined` dropped, `toJSON` honoured). A BigInt, a cycle, and a Map or a
 * Set (which JSON writes as `{}`, losing what tells two keys apart) are
 * refused with a `TypeError`.
 */
export function canonicalJson(value: unknown): string {
  return write(value, new Set())
}

function write(value: unknown, seen: Set<object>): string {
  if (
    value !== null &&
    typeof value === 'object' &&
    typeof (value as { toJSON?: unknown }).toJSON === 'function'
  ) {
    return write((value as { toJSON: () => unknown }).toJSON(), seen)
  }
  if (typeof value === 'bigint') throw new TypeError('canonicalJson: BigInt is not JSON')
  // JSON writes a Map or a Set as `{}` whatever it holds: two operations
  // differing only there (`args: new Map([['to', 'ana']])` and `'bob'`) got
  // one key, and the second got the first's remembered result, unsent.
  if (
    value instanceof Map ||
    value instanceof Set ||
    value instanceof WeakMap ||
    value instanceof WeakSet
  ) {
    throw new TypeError(
      `canonicalJson: a ${value.constructor.name} is written as {} whatever it holds; pass an object or an array`,
    )
  }
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null'
  if (seen.has(value)) throw new TypeError('canonicalJson: circular structure')
  seen.add(value)
  try {
    if (Array.isArray(value)) {
      return `[${value.map((item) => (isSkipped(item) ? 'null' : write(item, seen))).join(',')}]`
    }
    const fields = Object.keys(value)
      .sort()
      .filter((k) => !isSkipped((value as Record<string, unknown>)[k]))
      .map((k) => `${JSON.stringify(k)}:${write((value as Record<string, unknown>)[k], seen)}`)
    return `{${fields.join(',')}}`
  } finally {
    seen.delete(value)
  }
}

function isSkipped(value: unknown): boolean {
  return value === undefined || typeof value === 'function' || typeof value === 'symbol'
}
