/**
 * A value as BullMQ's Lua scripts read it with `tonumber`: a numeric string
 * (a back-off delay, a `changeDelay` delay or a timestamp from config or the
 * environment, `'60000'`) is that many ms there, where a check that read
 * only numbers took it for none. An empty string is none there too (nil),
 * and stays as it is. Anything else is returned unchanged.
 */
export function luaNumber<T>(value: T): T | number {
  return typeof value === 'string' && value.trim() !== '' ? Number(value) : value
}
