/**
 * A value as BullMQ's Lua scripts read it with `tonumber`, in its common
 * forms (Lua's `strtod` also reads signed and fractional hex, which no
 * config writes): a numeric string
 * (a back-off delay, a `changeDelay` delay or a timestamp from config or the
 * environment, `'60000'`) is that many ms there, where a check that read
 * only numbers took it for none. Lua reads `inf` (BullMQ would then park a
 * job for ever) and no `0b`/`0o` numerals (nil there, no delay); an empty
 * string is nil too, and stays as it is. Anything else is returned unchanged.
 */
export function luaNumber<T>(value: T): T | number {
  if (typeof value !== 'string' || value.trim() === '') return value
  const inf = /^\s*([+-]?)inf(?:inity)?\s*$/i.exec(value)
  if (inf) return inf[1] === '-' ? Number.NEGATIVE_INFINITY : Number.POSITIVE_INFINITY
  if (/^\s*[+-]?0[bo]/i.test(value)) return value
  return Number(value)
}
