/**
 * Call a user hook without letting it break the request it reports on. A hook
 * that throws has its error rethrown on the next tick — the way
 * `diagnostics_channel` treats a throwing subscriber — so the bug is loud but
 * the 504, the cleanup and the next middleware still happen.
 */
export function callHook<T>(hook: ((event: T) => void) | undefined, event: T): void {
  if (!hook) return
  try {
    hook(event)
  } catch (error) {
    process.nextTick(() => {
      throw error
    })
  }
}
