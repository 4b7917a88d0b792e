/**
 * Puts `value` on `target` as its own `name` (writable, configurable), over
 * whatever is there. Defined, not assigned: an instrumentation may have
 * pinned a response's writer (defined it not writable), and an assignment
 * threw — from the deadline's expiry, an uncaught exception in the host
 * process, the request never answered. False where it is pinned for good
 * (not configurable either): the caller goes on without its wrapper.
 */
export function replaceOwn(target: object, name: PropertyKey, value: unknown): boolean {
  try {
    Object.defineProperty(target, name, {
      value,
      writable: true,
      configurable: true,
      enumerable: Object.getOwnPropertyDescriptor(target, name)?.enumerable ?? true,
    })
    return true
  } catch {
    return false
  }
}
