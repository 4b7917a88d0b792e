/**
 * `value[key]` of something thrown or aborted with, or undefined when it has
 * none or reading it throws. A caller's abort reason reaches the attempt's
 * end, its retry decision and its events as it is, and may be anything: a
 * revoked Proxy throws on every read, an Error's getter may throw. Read
 * plainly, that throw came out of the abort listener (reported as uncaught)
 * and skipped what came after it: the request was never stopped and the
 * call never settled.
 */
export function fieldOf(value: unknown, key: string): unknown {
  if ((typeof value !== 'object' && typeof value !== 'function') || value === null) return undefined
  try {
    return (value as Record<string, unknown>)[key]
  } catch {
    return undefined
  }
}
