import { fieldOf } from '@hourglass/core'
import { unloggedField } from './unloggedField.js'

/**
 * undici's `HTTPParserError` (a response its HTTP/1.1 parser refused: a
 * control byte or a bare CR in a header value, a malformed status line)
 * keeps in its enumerable `data` the bytes it had read from where the
 * parser stopped: the rest of the bad header — a `Location`'s query after
 * its control byte, a signature, a session — every header after it
 * (`Set-Cookie`) and the start of the body, in every log line that prints
 * the error. Left readable, as unloggedField leaves a redirect's `Location`,
 * for code that looks at it; the message (llhttp's reason, no bytes of the
 * response) still says what was wrong. Told by its name: undici's own copy
 * and the caller's (`Symbol.for`) alike, and Node's bundled one.
 */
export function unlogParserData(error: unknown): void {
  // The name first: it is read safely, and `instanceof` throws on a revoked Proxy.
  if (fieldOf(error, 'name') !== 'HTTPParserError' || !(error instanceof Error)) return
  const data = Object.getOwnPropertyDescriptor(error, 'data')
  if (data?.enumerable && data.configurable) unloggedField(error, 'data', data.value)
}
