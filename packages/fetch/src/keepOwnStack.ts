/**
 * Undo, later, the `stack` that undici's `fetch()` writes onto a reason that
 * had none: it writes a stack trace onto whatever it rejects with (its
 * `appendFetchStackTrace`), and what it rejects with when a call is stopped
 * is the stop's reason — the caller's own (`controller.abort({ code })`, a
 * deadline's cancel reason, shared with everything else that hears it),
 * which came back with a `stack` key it never had. Returns the undo.
 *
 * An Error's own stack is left as undici leaves it (its frames appended):
 * keeping the text to put back means reading it, which formats the trace
 * synchronously in the abort's cascade (source-mapped under a test runner:
 * milliseconds each), ahead of the listeners that stop the work. Checked
 * by `Object.hasOwn`, which formats nothing.
 */
export function keepOwnStack(value: unknown): () => void {
  if (typeof value !== 'object' || value === null || hasOwnStack(value) !== false) return noop
  const target = value as { stack?: unknown }
  return () => {
    if (hasOwnStack(target) !== true) return
    try {
      delete target.stack
    } catch {
      // Made unconfigurable meanwhile: left as it is.
    }
  }
}

/**
 * Undefined when it cannot be told: a revoked Proxy throws on any look (undici
 * cannot write onto it either). Thrown here, in the abort listener, it skipped
 * the listeners after it: the fetch was never stopped, and never settled.
 */
function hasOwnStack(value: object): boolean | undefined {
  try {
    return Object.hasOwn(value, 'stack')
  } catch {
    return undefined
  }
}

function noop(): void {}
