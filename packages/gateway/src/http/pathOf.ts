import type { IncomingMessage } from 'node:http'

/**
 * The request's path without its query, relative to where the gateway is
 * mounted (a router strips its mount path from `req.url`): what Express's
 * `req.path` gives, read from Node's own `req.url`, so the gateway's handlers
 * need no Express request and run as well on a bare `http` server.
 */
export function pathOf(req: IncomingMessage): string {
  const url = req.url ?? '/'
  if (url.startsWith('/')) {
    const query = url.indexOf('?')
    return query === -1 ? url : url.slice(0, query)
  }
  // Absolute form (`POST http://host/v1/…`, as sent to a proxy).
  try {
    return new URL(url).pathname
  } catch {
    return url
  }
}
