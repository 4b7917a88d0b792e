import type { IncomingMessage } from 'node:http'
import { cutText } from '../llm.js'

/**
 * The most of a path a log line carries. Every path the gateway serves is
 * far shorter; the client's path is otherwise written whole into each line
 * about its request (up to Node's 16 KiB of headers).
 */
const MAX_PATH_CHARS = 256

/**
 * The request's path without its query, relative to where the gateway is
 * mounted (a router strips its mount path from `req.url`): what Express's
 * `req.path` gives, read from Node's own `req.url`, so the gateway's handlers
 * need no Express request and run as well on a bare `http` server. For log
 * lines and prefix checks: a path longer than `MAX_PATH_CHARS` is cut, `…`
 * last.
 */
export function pathOf(req: IncomingMessage): string {
  return cutText(fullPath(req.url ?? '/'), MAX_PATH_CHARS)
}

/** A target's `scheme://authority` in absolute form, whatever the authority holds. */
const ABSOLUTE_FORM = /^[a-z][a-z\d+.-]*:\/\/[^/?#]*/i

function fullPath(url: string): string {
  if (url.startsWith('/')) {
    const query = url.indexOf('?')
    return query === -1 ? url : url.slice(0, query)
  }
  // Absolute form (`POST http://host/v1/…`, as sent to a proxy).
  try {
    return new URL(url).pathname
  } catch {
    // An authority WHATWG's URL refuses (`http://h:99999/v1/…`, a port past
    // 65535) that Express's router still reads (parseurl: url.parse) and
    // routes by its path: the whole target taken for the path made the
    // request no API request — served, but not counted, not refused or
    // waited for by a drain, logged under the URL.
    const authority = ABSOLUTE_FORM.exec(url)
    if (authority === null) return url
    const rest = url.slice(authority[0].length)
    const end = rest.search(/[?#]/)
    const path = end === -1 ? rest : rest.slice(0, end)
    return path.startsWith('/') ? path : `/${path}`
  }
}

/**
 * The path the client sent, for log lines: mounted under a prefix
 * (`app.use('/llm', gateway)`), Express's `req.originalUrl` — `req.url` is
 * then relative to the mount, `/v1/…`, a path no client asked for and no
 * access log of the app's shows. `req.url` where nothing set it (a bare
 * `http` server). Query left out and cut as `pathOf`'s.
 */
export function loggedPathOf(req: IncomingMessage): string {
  return cutText(
    fullPath((req as { originalUrl?: string }).originalUrl ?? req.url ?? '/'),
    MAX_PATH_CHARS,
  )
}
