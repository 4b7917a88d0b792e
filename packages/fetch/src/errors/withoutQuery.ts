import { withoutPathParams } from '../withoutPathParams.js'

/**
 * A redirect's `Location` as an error message may show it: origin and path,
 * without the path's parameters. A message is logged, and a redirect's
 * query may carry a signature, its path a session (`;jsessionid=`, which a
 * servlet container puts in the redirects it sends). One that does not
 * parse is cut as text (`unparsedWithoutQuery`).
 */
export function withoutQuery(location: string): string {
  try {
    const url = new URL(location)
    const path = url.pathname
    return `${url.origin}${path.indexOf(';') === -1 ? path : withoutPathParams(path)}`
  } catch {
    return unparsedWithoutQuery(location)
  }
}

/**
 * A URL that does not parse, as a message or an event may show it: up to
 * its query or fragment, without credentials (`user:pass@`) or path
 * parameters. Shown as it came, a server's malformed Location
 * (`https://host:undefined/cb?sig=…`, a setting left unset) put its query
 * whole into the message of an error that is logged.
 */
export function unparsedWithoutQuery(text: string): string {
  const bare = (text.split(/[?#]/)[0] as string).replace(/^([^/]*\/\/)[^/@]*@/, '$1')
  return bare.indexOf(';') === -1 ? bare : withoutPathParams(bare)
}
