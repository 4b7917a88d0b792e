import { fieldOf } from './fieldOf.js'

/**
 * The one vocabulary for "what kind of failure is this", shared by every
 * package (events, logs, span attributes, retry decisions):
 *
 * - an Hourglass error's stable `code` (`DEADLINE_EXCEEDED`, `CONNECT_FAILED`, …);
 * - else a string `code` the error carries (Node's `ECONNRESET`, undici's
 *   `UND_ERR_SOCKET`);
 * - else its `name` (`AbortError`, `TypeError`);
 * - else `UNKNOWN`.
 *
 * Hourglass codes are SCREAMING_SNAKE_CASE without a prefix; they never
 * change once published. Low cardinality by construction: never a message.
 */
export function errorCode(error: unknown): string {
  if (typeof error === 'object' && error !== null) {
    const code = fieldOf(error, 'code')
    if (typeof code === 'string' && code !== '') return code
    const name = fieldOf(error, 'name')
    if (typeof name === 'string' && name !== '') return name
  }
  return 'UNKNOWN'
}

/**
 * True for an abort: a `DOMException`/`Error` named `AbortError` (what
 * `AbortController.abort()` with no reason, fetch, undici, node-fetch and
 * got throw) or Node's `ABORT_ERR` code; and what the common HTTP clients
 * throw in its place when their signal aborts, which says so by neither:
 * the official OpenAI and Anthropic SDKs' `APIUserAbortError` (no name of
 * its own, no cause: known by its class's name, so not once a bundler that
 * drops class names has minified it), axios's `CanceledError` (code
 * `ERR_CANCELED`; before axios 1, a `Cancel` marked `__CANCEL__`), got's
 * `CancelError` (its `.cancel()`). Not told apart, a handler awaiting
 * `openai.chat.completions.create(…, { signal: req.deadline.signal })`
 * reached the app's error handlers after its 504 with "Request was
 * aborted.", and its slice read `failed`, not `cancelled`. A deadline's own
 * expiry is not an abort — use `isDeadlineExceeded` for that.
 */
export function isAbortError(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false
  const name = fieldOf(error, 'name')
  if (name === 'AbortError' || name === 'CanceledError' || name === 'CancelError') return true
  const code = fieldOf(error, 'code')
  if (code === 'ABORT_ERR' || code === 'ERR_CANCELED') return true
  if (fieldOf(error, '__CANCEL__') === true) return true
  return fieldOf(fieldOf(error, 'constructor'), 'name') === 'APIUserAbortError'
}
