import type { Deadline } from './Deadline.js'

/**
 * Whether `value` is a Deadline, by shape, not class: one made by another
 * installed copy of this package (two versions in one node_modules tree)
 * is one too. What every option and function that takes a deadline checks
 * where it is given, rather than failing later, far from the call, with
 * "deadline.remaining is not a function" (a number of ms or a Date passed
 * where a Deadline belongs).
 */
export function isDeadline(value: unknown): value is Deadline {
  if (typeof value !== 'object' || value === null) return false
  const d = value as Partial<Deadline>
  try {
    return (
      typeof d.remaining === 'function' &&
      typeof d.throwIfExpired === 'function' &&
      typeof d.onDone === 'function'
    )
  } catch {
    return false // a revoked Proxy or a throwing getter: a guard answers, it does not throw
  }
}
