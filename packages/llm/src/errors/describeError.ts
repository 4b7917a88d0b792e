import { fieldOf, isError } from '@hourglass/core'

/**
 * A one-line human description of anything thrown (validators throw strings,
 * Errors, zod issues…). Never throws: it builds the message of the error
 * reported in its place (`SideEffectStoreError`, a repair's failure), and an
 * Error whose `message` getter throws or a revoked Proxy made that
 * constructor throw the value's own error instead. Such a value is said to
 * be one, not described as "an object": a tool's failure is what a model
 * reads, and the text must say why there is nothing more to read.
 */
export function describeError(error: unknown): string {
  if (isError(error)) {
    const message = fieldOf(error, 'message')
    return typeof message === 'string' ? message : 'an error whose message cannot be read'
  }
  if (typeof error === 'string') return error
  try {
    return JSON.stringify(error) ?? String(error)
  } catch {
    try {
      return String(error)
    } catch {
      return 'a value that cannot be described'
    }
  }
}
