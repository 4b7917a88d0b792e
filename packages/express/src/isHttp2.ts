import type { ServerResponse } from 'node:http'

/**
 * A response of Node's HTTP/2 compat API. It has no reason phrase, and warns
 * ("UnsupportedWarning: Status message is not supported by HTTP/2") on any
 * read or write of `statusMessage`: code of ours that touched it printed
 * that warning for a server that never did.
 */
export function isHttp2(res: ServerResponse): boolean {
  const req = (res as { req?: { httpVersionMajor?: number } }).req
  return (req?.httpVersionMajor ?? 1) >= 2
}
