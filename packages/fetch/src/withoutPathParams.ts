/**
 * A URL path without its segments' parameters (`/cart;jsessionid=…/items`
 * → `/cart/items`), for where a URL is shown (events, error messages): a
 * servlet container that cannot set a cookie puts the session in the path
 * (`;jsessionid=`; others `;sid=`), in the links and redirects it sends —
 * a credential, as a query may carry one. Every parameter is cut, not a
 * list of names: one that names a session under another name would stay.
 * Only for a path that has a `;` (the caller checks: no copy otherwise).
 */
export function withoutPathParams(path: string): string {
  return path.replace(PARAMS, '')
}

/** A `;` and what follows it up to the segment's end (the next `/`). */
const PARAMS = /;[^/]*/g
