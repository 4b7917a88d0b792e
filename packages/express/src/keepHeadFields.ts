import type { ServerResponse } from 'node:http'

// What Node writes into a head itself, from the response's state: the 504
// gets its own. `Connection` only when it says `close` (below).
const NODE_OWN = new Set([
  'date',
  'connection',
  'keep-alive',
  'transfer-encoding',
  'content-length',
])

const CLOSE = /(?:^|,)\s*close\s*(?:,|$)/i

/**
 * Store the fields of a head about to be dropped (`discardUnsentHead`) that
 * the response does not hold itself. `writeHead(status, headers)` on a
 * response with no header set before it (Express's `X-Powered-By` disabled,
 * no middleware that sets one) stores nothing: Node writes those headers
 * straight into the head, their only record. Dropped with it, the 504 lost
 * what it keeps when they were merged into the stored headers (with
 * `X-Powered-By` on): the CORS without which a browser reads the 504 as a
 * network error, cookies, `Vary`. And Node kept what it had read from
 * them: a `Connection: close` given there still closed the connection,
 * after a 504 that said `keep-alive`. Put back in their own spelling,
 * before the answer's own are set; what `dropBodyHeaders` drops still goes
 * after this. A field the response holds (merged, the usual case) is left
 * as it is. HTTP/1 only: `head` is Node's own `_header` string.
 */
export function keepHeadFields(res: ServerResponse, head: string): void {
  const fields = new Map<string, { name: string; values: string[] }>()
  // The status line first, then `name: value` lines, then the empty line.
  for (const line of head.split('\r\n').slice(1)) {
    const colon = line.indexOf(':')
    if (colon <= 0) continue
    const name = line.slice(0, colon)
    const key = name.toLowerCase()
    const value = line.slice(colon + 1).trim()
    if (res.hasHeader(key)) continue
    // Node says `close` on its own too (an HTTP/1.0 caller, `Connection:
    // close` asked): said again, it changes nothing. A `Keep-Alive` the
    // handler gave is kept too: Node marked the response for it
    // (`_defaultKeepAlive`) and writes none of its own after it.
    if (
      NODE_OWN.has(key) &&
      !(key === 'connection' && CLOSE.test(value)) &&
      !ownKeepAlive(res, key)
    )
      continue
    const field = fields.get(key)
    if (field === undefined) fields.set(key, { name, values: [value] })
    else field.values.push(value)
  }
  for (const { name, values } of fields.values()) {
    res.setHeader(name, values.length === 1 ? values[0]! : values)
  }
}

/** A `Keep-Alive` field the handler gave (Node then writes none of its own). */
function ownKeepAlive(res: ServerResponse, key: string): boolean {
  return (
    key === 'keep-alive' && (res as { _defaultKeepAlive?: boolean })._defaultKeepAlive === false
  )
}
