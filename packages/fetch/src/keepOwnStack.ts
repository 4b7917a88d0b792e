/**
 * Undo, later, what is done to `value`'s own `stack` meanwhile: undici's
 * `fetch()` writes a stack trace onto whatever it rejects with (its
 * `appendFetchStackTrace`), and what it rejects with when a call is stopped
 * is the stop's reason — the caller's own (`controller.abort({ code })`, a
 * deadline's cancel reason, shared with everything else that hears it). A
 * plain object came back with a `stack` key it never had, an Error with
 * undici's frames appended to the caller's. Returns the undo; nothing to
 * undo for a value that is not an object.
 */
export function keepOwnStack(value: unknown): () => void {
  if (typeof value !== 'object' || value === null) return noop
  const own = Object.getOwnPropertyDescriptor(value, 'stack')
  return () => {
    const now = Object.getOwnPropertyDescriptor(value, 'stack')
    if (now === undefined || (own !== undefined && now.value === own.value)) return
    try {
      if (own === undefined) delete (value as { stack?: unknown }).stack
      else Object.defineProperty(value, 'stack', own)
    } catch {
      // Made unconfigurable meanwhile: left as it is.
    }
  }
}

function noop(): void {}
