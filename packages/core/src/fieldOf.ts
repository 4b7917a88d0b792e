/**
 * `value[key]` of something thrown or aborted with, or undefined when it has
 * none or reading it throws. A caller's abort reason and a handler's throw
 * reach error handlers and abort listeners as they are, and may be anything:
 * a revoked Proxy throws on every look, an Error's getter may throw. Read
 * plainly, that throw replaced the error being handled, or came out of the
 * listener (reported as uncaught) and skipped what came after it.
 */
export function fieldOf(value: unknown, key: PropertyKey): unknown {
  if ((typeof value !== 'object' && typeof value !== 'function') || value === null) return undefined
  try {
    return (value as Record<PropertyKey, unknown>)[key]
  } catch {
    return undefined
  }
}

/** `value instanceof Error`, false where asking throws (a revoked Proxy). */
export function isError(value: unknown): value is Error {
  return isInstance(value, Error)
}

/**
 * `value instanceof type`, false where asking throws: a revoked Proxy throws
 * at the question, and that TypeError replaced the value being handled.
 */
export function isInstance<T>(
  value: unknown,
  type: abstract new (...args: never[]) => T,
): value is T {
  try {
    return value instanceof type
  } catch {
    return false
  }
}

/**
 * Whether `value` is a thenable (an object or function with a `then`
 * method), as a hook's or a handler's return is judged: a promise to
 * settle, or a rejection to handle. False where the look throws.
 */
export function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof fieldOf(value, 'then') === 'function'
}
