/**
 * The first number under `value` that JSON cannot hold — NaN, Infinity or
 * -Infinity — with its path under `value` (`.seed`, `.logit_bias["50256"]`,
 * `.properties.n.maximum`, `[1]`; `''` for `value` itself), to be named
 * after the field `value` is, in the order JSON writes them; undefined when
 * there is none. JSON.stringify writes such a
 * number as `null`: a `seed: NaN` went out as `"seed": null` (no seed at
 * all), a NaN penalty as the provider's default, a schema's
 * `maximum: Infinity` as a `null` where the schema wants a number, a tool
 * call's `{ t: NaN }` as `{ "t": null }` — NaN given a meaning the caller
 * never chose. One walk for `extra`, a tool's `parameters` and a tool
 * call's arguments: the same value is refused the same way in each.
 *
 * What is under `value` is walked as JSON writes it: what a `toJSON`
 * returns (called as JSON.stringify calls it, with its key, as
 * `unwritableRequest` does to find a BigInt), a `new Number(NaN)` as its
 * number. `value` itself is walked as its fields (`extra`'s go into the
 * body one by one), or, with `whole`, as JSON writes it too: a tool's
 * `parameters` and a call's arguments are written whole, their own `toJSON`
 * called.
 *
 * Run on every call, over values that may be megabytes (a gateway client's
 * 1.9 M-number array): only containers go on the stack, each with its
 * position and its parent, numbers are checked where they lie, and a path
 * is built only for the number found — a step and a path string per value
 * made the walk 30–100 times slower than writing the value. No recursion (a
 * value may nest deeper than the stack allows); each object once, known by
 * itself, not by what its `toJSON` returns (a new object each call): a
 * linked list whose nodes' `toJSON` return `{ value, prev, next }` was
 * walked along every path through it — 53 s for three nodes, then a raw
 * "Set maximum size exceeded". One met again (one that refers to itself)
 * is left to the build, which refuses it by name (`unwritableRequest`).
 * Nothing below `MAX_DEPTH` either, where a `toJSON` that returns a new
 * object each time would have it walk for ever: the build refuses that too.
 */
export function nonFiniteIn(
  value: unknown,
  { whole = false }: { whole?: boolean } = {},
): NonFinite | undefined {
  const root = whole ? written(value, '') : value
  if (typeof root === 'number') return Number.isFinite(root) ? undefined : { path: '', value: root }
  if (typeof root !== 'object' || root === null) return undefined
  // Made once a container holds another: most tool calls' arguments are flat.
  let seen: Set<object> | undefined
  const stack: Frame[] = [frameOf(root, undefined, '')]
  while (stack.length > 0) {
    const frame = stack[stack.length - 1] as Frame
    const { container, keys } = frame
    if (frame.next >= (keys ?? (container as unknown[])).length) {
      stack.pop()
      continue
    }
    const key = keys === undefined ? frame.next : (keys[frame.next] as string)
    frame.next++
    const raw: unknown = (container as Record<string | number, unknown>)[key]
    if (typeof raw === 'object' && raw !== null) {
      // `value` itself too when `whole`: `root` is what its `toJSON` returned.
      seen ??= new Set<object>([root, value as object])
      // Before its `toJSON` is called: what that returns is new each time.
      if (seen.has(raw)) continue
      seen.add(raw)
    }
    const child = written(raw, key)
    if (typeof child === 'number') {
      if (!Number.isFinite(child)) return { path: pathOf(frame, key), value: child }
      continue
    }
    if (typeof child !== 'object' || child === null) continue
    // Past what JSON.stringify writes: the build refuses the value, and each
    // of a deeper level's objects, made anew by a `toJSON`, would be walked.
    if (stack.length >= MAX_DEPTH) return undefined
    // A `toJSON` that returns an object met already (itself, a parent).
    if (child !== raw) {
      if (seen?.has(child)) continue
      seen?.add(child)
    }
    stack.push(frameOf(child, frame, key))
  }
  return undefined
}

export interface NonFinite {
  path: string
  value: number
}

/** Deeper than JSON.stringify writes (~4,000 levels on Node 20): the build refuses such a value by name. */
const MAX_DEPTH = 20_000

interface Frame {
  /** An object or array, as JSON writes it. */
  readonly container: object
  /** Its keys, as JSON writes them; undefined for an array, walked by index. */
  readonly keys: string[] | undefined
  /** The position of the next entry to look at. */
  next: number
  readonly parent: Frame | undefined
  /** Its key in `parent`. */
  readonly key: string | number
}

function frameOf(container: object, parent: Frame | undefined, key: string | number): Frame {
  const keys = Array.isArray(container) ? undefined : Object.keys(container)
  return { container, keys, next: 0, parent, key }
}

/** `value` as JSON.stringify writes it: what its `toJSON` returns, a boxed number as its number. */
function written(value: unknown, key: string | number): unknown {
  if (typeof value !== 'object' || value === null) return value
  let out: unknown = value
  const toJSON = (value as { toJSON?: unknown }).toJSON
  try {
    if (typeof toJSON === 'function') out = toJSON.call(value, String(key))
    return out instanceof Number ? Number(out) : out
  } catch {
    // Thrown again by the build, as it was before this check.
    return undefined
  }
}

/** The keys from the walk's root down to `last`. */
function pathOf(frame: Frame, last: string | number): string {
  const keys: Array<string | number> = [last]
  for (let f: Frame = frame; f.parent !== undefined; f = f.parent) keys.push(f.key)
  let path = ''
  for (let i = keys.length - 1; i >= 0; i--) {
    const key = keys[i] as string | number
    path +=
      typeof key === 'number' ? `[${key}]` : NAME.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`
  }
  return path
}

/**
 * A key written after a dot; any other (`"50256"`, `"a.b"`) is written in
 * brackets, as the gateway names a field: `logit_bias.a.b` could be either.
 */
const NAME = /^[A-Za-z_$][\w$-]*$/
