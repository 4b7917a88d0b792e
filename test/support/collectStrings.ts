/**
 * Every string reachable from `value` (own properties, array items, Map and
 * Set entries, an error's message, stack and cause), to scan for secrets.
 * Cycles are followed once; `skipKeys` leaves out live framework objects
 * (`req`) that a diagnostics message hands over by reference.
 */
export function collectStrings(
  value: unknown,
  options: { skipKeys?: readonly string[]; maxDepth?: number } = {},
): string[] {
  const out: string[] = []
  const seen = new WeakSet<object>()
  const skip = new Set(options.skipKeys ?? [])
  const maxDepth = options.maxDepth ?? 12
  const walk = (v: unknown, depth: number) => {
    if (typeof v === 'string') {
      out.push(v)
      return
    }
    if (typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean') return
    if (v === null || (typeof v !== 'object' && typeof v !== 'function')) return
    if (seen.has(v as object) || depth > maxDepth) return
    seen.add(v as object)
    if (v instanceof Error) {
      out.push(v.message, v.stack ?? '')
      walk(v.cause, depth + 1)
    }
    if (v instanceof Map) {
      for (const [k, x] of v) {
        walk(k, depth + 1)
        walk(x, depth + 1)
      }
      return
    }
    if (v instanceof Set) {
      for (const x of v) walk(x, depth + 1)
      return
    }
    if (typeof v === 'function') return
    for (const key of Object.keys(v as object)) {
      if (skip.has(key)) continue
      out.push(key)
      walk((v as Record<string, unknown>)[key], depth + 1)
    }
  }
  walk(value, 0)
  return out
}
