import { withoutPathParams } from '../withoutPathParams.js'

/**
 * A redirect's `Location` as an error message may show it: origin and path,
 * without the path's parameters. A message is logged, and a redirect's
 * query may carry a signature, its path a session (`;jsessionid=`, which a
 * servlet container puts in the redirects it sends). One that does not
 * parse is cut as text (`unparsedWithoutQuery`).
 */
export function withoutQuery(location: string): string {
  let url: URL
  try {
    url = new URL(location)
  } catch {
    return unparsedWithoutQuery(location)
  }
  // A `data:` URL its scheme alone: the rest is its payload, of any size.
  if (url.protocol === 'data:') return url.protocol
  // Scheme, host (if any) and path, read off the URL with its query,
  // fragment and credentials cleared, not off `origin`: a scheme other than
  // http(s) has none worth the name — `foo://host/x`'s and `file:`'s is
  // "null" (shown as `null/x`), `blob:https://host/…`'s the page's (shown
  // twice).
  url.search = ''
  url.hash = ''
  url.username = ''
  url.password = ''
  const path = url.pathname
  const head = url.href.slice(0, url.href.length - path.length)
  // A path that is no path (`mailto:…`, `blob:https://…`) cut as text, as
  // a URL that does not parse is: it may hold a URL of its own.
  if (!path.startsWith('/')) return `${head}${unparsedWithoutQuery(path)}`
  return `${head}${path.indexOf(';') === -1 ? path : withoutPathParams(path)}`
}

/**
 * `user:pass@` as the URL parser reads it: after the scheme and any number
 * of slashes — none (`https:user:pw@host`) or a backslash, which is a slash
 * for http(s) — or after `//` with no scheme, up to the LAST `@` before the
 * host's end (a `/` or `\`): a password may hold an `@` (`p@ss`), and
 * cutting at the first left its tail before the host. After what the
 * parser strips first, C0 controls and spaces (any control character: a
 * cut too many shows less, never more).
 */
const USERINFO = /^([\s\p{Cc}]*(?:[a-zA-Z][a-zA-Z0-9+.-]*:[/\\]*|[/\\]{2,}))[^/\\]*@/u

/**
 * The same for a scheme that is not special (not http, https, ws, wss, ftp
 * or file): a backslash ends its authority no more than any other byte,
 * and in `foo://user:P\W@host` the parser reads `P\W` as the password,
 * which a cut at the backslash showed.
 */
const OTHER_USERINFO = /^([\s\p{Cc}]*[a-zA-Z][a-zA-Z0-9+.-]*:[/\\]*)[^/]*@/u

/** The text's scheme, if it starts with one (a relative Location has none). */
const SCHEME = /^[\s\p{Cc}]*([a-zA-Z][a-zA-Z0-9+.-]*):/u

/** The schemes whose authority a backslash ends (the URL standard's special schemes). */
const SPECIAL_SCHEMES: ReadonlySet<string> = new Set(['http', 'https', 'ws', 'wss', 'ftp', 'file'])

/**
 * A URL that does not parse, as a message or an event may show it: up to
 * its query or fragment, without credentials (`user:pass@`) or path
 * parameters. Shown as it came, a server's malformed Location
 * (`https://host:undefined/cb?sig=…`, a setting left unset) put its query
 * whole into the message of an error that is logged. One URL: several
 * Location headers joined are not cut part by part (a password holding ", "
 * escaped such a cut) — show one of them.
 */
export function unparsedWithoutQuery(text: string): string {
  // Tabs and newlines out first, as the URL parser takes them out anywhere.
  const bare = text.replace(/[\t\n\r]/g, '').split(/[?#]/)[0] as string
  const cut = withoutCredentials(bare)
  return cut.indexOf(';') === -1 ? cut : withoutPathParams(cut)
}

function withoutCredentials(text: string): string {
  const scheme = SCHEME.exec(text)?.[1]
  const special = scheme === undefined || SPECIAL_SCHEMES.has(scheme.toLowerCase())
  return text.replace(special ? USERINFO : OTHER_USERINFO, '$1')
}
