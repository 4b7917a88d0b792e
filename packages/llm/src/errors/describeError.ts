import { isError, messageOf } from '@hourglass/core'

/**
 * A one-line human description of anything thrown (validators throw strings,
 * Errors, zod issues…). Never throws: it builds the message of the error
 * reported in its place (`SideEffectStoreError`, a repair's failure), and an
 * Error whose `message` getter throws or a revoked Proxy made that
 * constructor throw the value's own error instead.
 */
export function describeError(error: unknown): string {
  if (isError(error)) return messageOf(error)
  if (typeof error === 'string') return error
  try {
    return JSON.stringify(error) ?? String(error)
  } catch {
    return messageOf(error)
  }
}
