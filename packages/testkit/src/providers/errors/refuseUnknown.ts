/**
 * Refuses a builder's argument that is not one of `known`, a TypeError
 * naming the builder, the argument and what it takes: indexed as it came, a
 * value a table does not hold scripted something else without a word
 * (`ernieErrors.rateLimited('RPM')` answered a 200 success) or crashed
 * reading a field of `undefined`. `known` is a table (its own keys) or a
 * list. The message keeps each builder's wording: `<where>: <name> must be
 * one of a, b, got x`.
 */
export function refuseUnknown(
  where: string,
  name: string,
  known: object | readonly string[],
  value: unknown,
): void {
  const keys = Array.isArray(known) ? known : Object.keys(known)
  const ok = Array.isArray(known)
    ? known.includes(value as string)
    : typeof value === 'string' && Object.hasOwn(known, value)
  if (!ok) {
    throw new TypeError(`${where}: ${name} must be one of ${keys.join(', ')}, got ${String(value)}`)
  }
}
