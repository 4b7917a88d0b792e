/** The methods fetch upper-cases (the spec's "normalize"); any other is sent as written. */
const NORMALIZED = new Set(['DELETE', 'GET', 'HEAD', 'OPTIONS', 'POST', 'PUT'])

/**
 * The method undici's fetch sends for `init.method` (else the Request's,
 * else GET), worked out as fetch works it out, so the retry rules judge the
 * request that is sent. A member present with any value but `undefined` is
 * converted to a string, as WebIDL converts it: `method: null` is the method
 * `null` (`new Request(url, { method: null }).method === 'null'`), not GET —
 * read as GET, a `null` request answered 503 was sent again as "idempotent".
 * Only the six methods fetch normalises are upper-cased: `patch` goes out as
 * `patch`, so it is not taken for `PATCH` here either.
 */
export function fetchMethod(given: unknown, requestMethod: string | undefined): string {
  if (given === undefined) return requestMethod ?? 'GET'
  const method = String(given)
  const upper = method.toUpperCase()
  return NORMALIZED.has(upper) ? upper : method
}
