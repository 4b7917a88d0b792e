/**
 * What is wrong with the database a `redis://` URL selects, read as ioredis
 * reads it; undefined when nothing is. ioredis takes the path after the host
 * (`redis://h:6379/2`), else the query's last `db`, and once connected
 * sends `SELECT` with `parseInt` of it. A name there —
 * `redis://h:6379/hourglass`, meant as a namespace, which is
 * `redis.keyPrefix` — was `SELECT NaN`, whose refusal ioredis leaves
 * unhandled: the process ended with a stack trace as soon as Redis
 * connected, at start or, with Redis down at start, when it came back (every
 * instance of the fleet at once). A negative number is refused by Redis
 * after the connection is ready, and the counts went to database 0 instead.
 * A whole number is what ioredis and Redis read as one.
 */
export function redisDatabaseProblem(url: string): string | undefined {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return undefined
  }
  const { pathname } = parsed
  const fromPath = pathname !== '' && pathname !== '/'
  const db = fromPath ? pathname.slice(1) : parsed.searchParams.getAll('db').at(-1)
  if (db === undefined || /^\d+$/.test(db)) return undefined
  // The path or value is not quoted back: the URL may hold a password.
  return fromPath
    ? 'expected nothing after the host but a database number (redis://host:6379/2): the Redis client selects the database the path names, and a name there stopped the process once Redis connected (a namespace for the keys is redis.keyPrefix)'
    : 'expected the query\'s "db" to be a database number (?db=2): the Redis client selects the database it names, and a name there stopped the process once Redis connected'
}
