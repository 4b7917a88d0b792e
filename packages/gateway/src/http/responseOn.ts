import type { ServerResponse } from 'node:http'
import type { Duplex } from 'node:stream'

/**
 * The response Node is writing on `socket`, if a request was handed over
 * and is not yet answered: Node sets it when a response takes the socket
 * and clears it when that response finishes, and its own `clientError`
 * handler reads the same field. Read here rather than tracked per request
 * (a set and a `close` listener on every response, for a failure that
 * almost never comes).
 */
export function responseOn(socket: Duplex): ServerResponse | undefined {
  return (socket as { _httpMessage?: ServerResponse | null })._httpMessage ?? undefined
}
