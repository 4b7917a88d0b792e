/**
 * `value` as JSON.stringify writes it under `key`: what its `toJSON`
 * returns, if it has one (a schema class's, on its prototype). Spread into
 * a new object, such a `toJSON` was lost: the class's fields went out
 * (`maximum: Infinity` as null), not the schema the NaN check had read
 * (`checkCallOptions`, which calls it) and OpenAI sends. Only the value's
 * own: one below it is still written by JSON when the request is.
 */
export function writtenAs(value: unknown, key: string): unknown {
  const toJSON = (value as { toJSON?: unknown } | null | undefined)?.toJSON
  return typeof value === 'object' && typeof toJSON === 'function' ? toJSON.call(value, key) : value
}
