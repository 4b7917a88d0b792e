/**
 * The first number in `extra` that JSON cannot hold — NaN, Infinity or
 * -Infinity — with its path (`seed`, `logit_bias.50256`,
 * `response_format.json_schema.schema.properties.n.maximum`,
 * `stop_token_ids[1]`), in the order JSON writes them; undefined when there
 * is none. JSON.stringify writes such a number as `null`: a `seed: NaN`
 * went out as `"seed": null` (no seed at all), a NaN penalty as the
 * provider's default, a schema's `maximum: Infinity` as a `null` where
 * the schema wants a number — NaN given a meaning the caller never chose.
 *
 * Walked with a stack of its own (no recursion: a value may nest deeper than
 * the stack allows) and each object once (one that refers to itself is left
 * to the build, which refuses it by name: `unwritableRequest`). An object
 * with a `toJSON` is written as what that returns, which is its own: not
 * walked, nor called.
 */
export function nonFiniteInExtra(extra: object): { path: string; value: number } | undefined {
  const seen = new Set<object>([extra])
  const stack: Array<{ value: unknown; path: string }> = []
  pushChildren(stack, extra, '')
  for (;;) {
    const step = stack.pop()
    if (step === undefined) return undefined
    const { value, path } = step
    if (typeof value === 'number') {
      if (!Number.isFinite(value)) return { path, value }
      continue
    }
    if (typeof value !== 'object' || value === null || seen.has(value)) continue
    if (typeof (value as { toJSON?: unknown }).toJSON === 'function') continue
    seen.add(value)
    pushChildren(stack, value, path)
  }
}

/** `value`'s entries onto `stack`, the first on top: found in the order JSON writes them. */
function pushChildren(
  stack: Array<{ value: unknown; path: string }>,
  value: object,
  path: string,
): void {
  if (Array.isArray(value)) {
    for (let i = value.length - 1; i >= 0; i--)
      stack.push({ value: value[i], path: `${path}[${i}]` })
    return
  }
  const keys = Object.keys(value)
  for (let k = keys.length - 1; k >= 0; k--) {
    const key = keys[k] as string
    stack.push({
      value: (value as Record<string, unknown>)[key],
      path: path === '' ? key : `${path}.${key}`,
    })
  }
}
