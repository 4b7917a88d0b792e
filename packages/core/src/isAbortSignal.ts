/**
 * Whether `value` is an AbortSignal, by shape (any realm's, undici's or
 * Node's): what every option that takes a `signal` checks where it is
 * given. An AbortController passed for its signal, or `{}`, otherwise
 * failed later with "signal.addEventListener is not a function" — inside a
 * listener or a stream, where nothing caught it.
 */
export function isAbortSignal(value: unknown): value is AbortSignal {
  const s = value as Partial<AbortSignal> | null
  return (
    typeof s === 'object' &&
    s !== null &&
    typeof s.aborted === 'boolean' &&
    typeof s.addEventListener === 'function' &&
    typeof s.removeEventListener === 'function'
  )
}
