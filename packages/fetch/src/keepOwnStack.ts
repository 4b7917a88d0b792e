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
  if (typeof value !== 'object' || value === null || Object.hasOwn(value, 'stack')) return noop
  const target = value as { stack?: unknown }
  return () => {
    if (!Object.hasOwn(target, 'stack')) return
    try {
      delete target.stack
    } catch {
      // Made unconfigurable meanwhile: left as it is.
    }
  }
}

function noop(): void {}
