/**
 * True for a message that holds headers rather than being them: an
 * `IncomingMessage` (`req`), a fetch `Request` or `Response`, a `RequestInit`
 * (`{ method, headers }`) — an object with no `get` of its own whose
 * `headers` is an object (not an array: a header named `headers` sent twice).
 * No header record holds one: a header's value is text. Passed where its
 * headers belong, `readDeadline(req)` read no deadline from any request and
 * `writeDeadline(init, d)` put the header on the init, where fetch never
 * sends it — both without a word. Never throws: a container whose reads
 * throw is left to the caller's own handling of it.
 */
export function holdsHeaders(value: object): boolean {
  try {
    if (typeof (value as { get?: unknown }).get === 'function') return false
    const inner = (value as { headers?: unknown }).headers
    return typeof inner === 'object' && inner !== null && !Array.isArray(inner)
  } catch {
    return false
  }
}
