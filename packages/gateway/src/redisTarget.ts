/**
 * Where ioredis connects for a `redis://` URL, read as its `parseURL` reads
 * it: the URL's own host and port first; what they leave out from the query
 * (`?host=…&port=…`, the last of each, as ioredis keeps the last); a query
 * `path` (a Unix socket) over both. `host` is `''` when neither names one:
 * ioredis then dials localhost:6379, each instance its own Redis or none.
 * For the config check and for the log line that names an unreachable Redis.
 */
export function redisTarget(url: string): { host: string; port: string; path: string } | undefined {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return undefined
  }
  const query = (name: string) => parsed.searchParams.getAll(name).at(-1) ?? ''
  return {
    // WHATWG keeps an IPv6 host in brackets; ioredis strips them.
    host: parsed.hostname.replace(/^\[|\]$/g, '') || query('host'),
    port: parsed.port || query('port'),
    path: query('path'),
  }
}

/** A target as a log line names it: the socket's path, else `host:port` (`[::1]:6380`), `localhost` for none. */
export function describeRedisTarget(url: string): string {
  const target = redisTarget(url)
  if (target === undefined) return '(redis)'
  if (target.path !== '') return target.path
  const host =
    target.host === '' ? 'localhost' : target.host.includes(':') ? `[${target.host}]` : target.host
  return target.port === '' ? host : `${host}:${target.port}`
}
