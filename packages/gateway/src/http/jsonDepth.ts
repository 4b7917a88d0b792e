/**
 * Levels of nesting the gateway accepts in any free-form JSON a client sends
 * (tool parameter schemas, `response_format` schemas, tool-call arguments,
 * unknown fields). Deeper values parse, but cannot be serialised again for
 * the provider (`JSON.stringify` overflows the stack near 5,000 levels), and
 * no real schema comes close.
 */
export const MAX_JSON_DEPTH = 64

/**
 * Whether `value` nests deeper than `maxDepth` arrays/objects (a scalar is
 * depth 0). Iterative and stops at the first value past the limit, so a
 * hostile 100,000-level value costs no more than `maxDepth` levels of it.
 */
export function nestsDeeperThan(value: unknown, maxDepth: number): boolean {
  const stack: Array<{ value: unknown; depth: number }> = [{ value, depth: 0 }]
  while (stack.length > 0) {
    const { value: next, depth } = stack.pop() as { value: unknown; depth: number }
    if (typeof next !== 'object' || next === null) continue
    if (depth + 1 > maxDepth) return true
    const children = Array.isArray(next) ? next : Object.values(next)
    for (const child of children) {
      if (typeof child === 'object' && child !== null)
        stack.push({ value: child, depth: depth + 1 })
    }
  }
  return false
}
