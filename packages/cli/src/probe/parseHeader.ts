import { isHeaderName } from '@hourglass/core'
import { printable } from '../printable.js'
import { UsageError } from '../UsageError.js'

// Headers that frame the connection or the message, which undici sets itself
// and refuses from a caller.
const CLIENT_OWNED = new Set(['transfer-encoding', 'keep-alive', 'upgrade', 'expect'])

// Headers fetch deletes from a caller's request without a word: given, they
// would be promised "on every call" and never sent — a `Host` would time the
// default virtual host of the address instead of the one asked for.
const FETCH_DROPS = new Map([
  [
    'host',
    'fetch sets Host from the URL; put the host name in the URL (map it to the address in /etc/hosts to reach one server)',
  ],
  ['content-length', 'fetch sets it (a probe GET has no body)'],
])

/**
 * `--header 'name: value'` as a [name, value] pair, or a UsageError saying
 * what is wrong. The value is never quoted back: it is often a credential.
 */
export function parseHeader(text: string): [string, string] {
  const colon = text.indexOf(':')
  if (colon < 0) {
    throw new UsageError(
      "hourglass probe: --header must be 'name: value', got one without a ':' (see hourglass probe --help)",
    )
  }
  const name = text.slice(0, colon).trim()
  const value = text.slice(colon + 1).trim()
  if (!isHeaderName(name)) {
    throw new UsageError(
      name === ''
        ? "hourglass probe: --header must be 'name: value', got an empty name"
        : `hourglass probe: --header name '${printable(name)}' is not a valid header name`,
    )
  }
  if (/[\r\n\0]/.test(value)) {
    throw new UsageError(
      `hourglass probe: --header '${name}' has a line break or NUL in its value, which HTTP does not allow`,
    )
  }
  // What Node lets into a header value: tab, visible ASCII and Latin-1
  // bytes. A character past U+00FF has no single byte to be.
  if (/[^\t\x20-\x7e\x80-\xff]/.test(value)) {
    throw new UsageError(
      `hourglass probe: --header '${name}' has a character a header value cannot carry (a control character, or one past Latin-1 such as a pasted '…')`,
    )
  }
  const dropped = FETCH_DROPS.get(name.toLowerCase())
  if (dropped !== undefined) {
    throw new UsageError(`hourglass probe: --header '${name}' cannot be sent: ${dropped}`)
  }
  // undici sends `close` or `keep-alive` and nothing else: any other value
  // (`upgrade`, a typo) went out as `keep-alive`, the header promised on
  // every call never sent.
  if (name.toLowerCase() === 'connection' && !/^(close|keep-alive)$/i.test(value)) {
    throw new UsageError(
      `hourglass probe: --header '${name}' can only be 'close' or 'keep-alive' (the HTTP client sends no other)`,
    )
  }
  if (CLIENT_OWNED.has(name.toLowerCase())) {
    throw new UsageError(
      `hourglass probe: --header '${name}' is the HTTP client's own to send and cannot be given`,
    )
  }
  return [name, value]
}
