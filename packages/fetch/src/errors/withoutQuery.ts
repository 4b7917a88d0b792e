import { withoutPathParams } from '../withoutPathParams.js'

/**
 * A redirect's `Location` as an error message may show it: origin and path,
 * without the path's parameters. A message is logged, and a redirect's
 * query may carry a signature, its path a session (`;jsessionid=`, which a
 * servlet container puts in the redirects it sends). One that does not
 * parse is shown as it came.
 */
export function withoutQuery(location: string): string {
  try {
    const url = new URL(location)
    const path = url.pathname
    return `${url.origin}${path.indexOf(';') === -1 ? path : withoutPathParams(path)}`
  } catch {
    return location
  }
}
