/**
 * Undo, later, what is done to `value`'s own `stack` meanwhile: undici's
 * `fetch()` writes a stack trace onto whatever it rejects with (its
 * `appendFetchStackTrace`), and what it rejects with when a call is stopped
 * is the stop's reason — the caller's own (`controller.abort({ code })`, a
 * deadline's cancel reason, shared with everything else that hears it). A
 * plain object came back with a `stack` key it never had, an Error with
 * undici's frames appended to the caller's. Returns the undo; nothing to
 * undo for a value that is not an object.
 *
 * An Error's own `stack` is a data property on Node 20 and an accessor
 * (get/set) on Node 22 and 24 (V8 12+), DOMException's too: the text read
 * now is what is put back, through the setter where there is one.
 */
export function keepOwnStack(value: unknown): () => void {
  if (typeof value !== 'object' || value === null) return noop
  const target = value as { stack?: unknown }
  const own = Object.getOwnPropertyDescriptor(target, 'stack')
  const accessor = own !== undefined && !('value' in own)
  const kept = own === undefined ? undefined : accessor ? safeRead(target) : own.value
  return () => {
    const now = Object.getOwnPropertyDescriptor(target, 'stack')
    if (now === undefined) return
    try {
      if (own === undefined) delete target.stack
      else if (accessor) {
        if (safeRead(target) !== kept) target.stack = kept
      } else if (now.value !== kept) Object.defineProperty(target, 'stack', own)
    } catch {
      // Made unconfigurable or read-only meanwhile: left as it is.
    }
  }
}

function safeRead(target: { stack?: unknown }): unknown {
  try {
    return target.stack
  } catch {
    return undefined
  }
}

function noop(): void {}
