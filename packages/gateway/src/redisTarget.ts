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

/**
 * What of `url` ioredis cannot read, said without the secret (neither the
 * URL nor a part of it is quoted back: it may hold a password); empty when
 * it reads.
 *
 * - ioredis percent-decodes the URL's user and password
 *   (`decodeURIComponent`): one written as it is, with a `%` that starts no
 *   escape — a generated password such as `50%off` — threw a bare
 *   `URIError: URI malformed` out of `new Redis(url)`, and so out of
 *   `createGateway`, naming neither the field nor the fix.
 * - ioredis takes the database from the path after the host
 *   (`redis://h:6379/2`), else the query's last `db`, and once connected
 *   sends `SELECT` with `parseInt` of it. A name there —
 *   `redis://h:6379/hourglass`, meant as a namespace, which is
 *   `redis.keyPrefix` — was `SELECT NaN`, whose refusal ioredis leaves
 *   unhandled: the process ended with a stack trace as soon as Redis
 *   connected, at start or, with Redis down at start, when it came back
 *   (every instance of the fleet at once). A negative number is refused by
 *   Redis after the connection is ready, and the counts went to database 0.
 *
 * The config schema refuses such a URL at `redis.url`, so `--check` says so too.
 */
export function redisUrlProblems(url: string): string[] {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return []
  }
  const problems: string[] = []
  for (const [part, text] of [
    ['user', parsed.username],
    ['password', parsed.password],
  ] as const) {
    try {
      decodeURIComponent(text)
    } catch {
      problems.push(
        `its ${part} holds a "%" that starts no valid percent-escape, which the Redis client cannot decode: percent-encode the ${part} (a "%" as %25)`,
      )
      break
    }
  }
  const { pathname } = parsed
  const fromPath = pathname !== '' && pathname !== '/'
  const db = fromPath ? pathname.slice(1) : parsed.searchParams.getAll('db').at(-1)
  if (db !== undefined && !/^\d+$/.test(db)) {
    problems.push(
      fromPath
        ? 'expected nothing after the host but a database number (redis://host:6379/2): the Redis client selects the database the path names, and a name there stopped the process once Redis connected (a namespace for the keys is redis.keyPrefix)'
        : 'expected the query\'s "db" to be a database number (?db=2): the Redis client selects the database it names, and a name there stopped the process once Redis connected',
    )
  }
  return problems
}
