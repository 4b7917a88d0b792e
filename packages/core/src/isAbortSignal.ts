/**
 * Whether `value` is an AbortSignal, by shape (any realm's, undici's or
 * Node's): what every option that takes a `signal` checks where it is
 * given. An AbortController passed for its signal, or `{}`, otherwise
 * failed later with "signal.addEventListener is not a function" — inside a
 * listener or a stream, where nothing caught it.
 */
export function isAbortSignal(value: unknown): value is AbortSignal {
  if (typeof value !== 'object' || value === null) return false
  const s = value as Partial<AbortSignal>
  try {
    return (
      typeof s.aborted === 'boolean' &&
      typeof s.addEventListener === 'function' &&
      typeof s.removeEventListener === 'function'
    )
  } catch {
    return false // a revoked Proxy or a throwing getter: a guard answers, it does not throw
  }
}
