import { describeValue, isAbortSignal, isDeadline } from '@hourglass/core'

/**
 * The fields of `Admission.acquire`'s request that are not numbers (those
 * are `checkNumber`'s), refused naming the field: `keys: 'sk-…'` (one key,
 * not in an array) was spread into its characters — a permit for key `s` —,
 * a `null` among the keys threw a `TypeError` from `crypto` hashing it, a
 * `deadline` of 500 (ms, not a `Deadline`) was taken as no deadline at all,
 * and a `signal` that is no `AbortSignal` failed as "throwIfAborted is not a
 * function". Plain checks: nothing is allocated unless something is wrong.
 */
export function checkAdmissionRequest(request: {
  provider?: unknown
  keys?: unknown
  deadline?: unknown
  signal?: unknown
}): void {
  const where = 'Admission.acquire'
  if (typeof request !== 'object' || request === null) {
    throw new TypeError(
      `${where}: the request must be an object ({ provider, keys, deadline, … }), got ${describeValue(request)}`,
    )
  }
  const { provider, keys, deadline, signal } = request
  if (typeof provider !== 'string') {
    throw refused(`${where}: provider`, 'a string (the provider’s name)', provider)
  }
  if (keys !== undefined) {
    if (!Array.isArray(keys)) {
      // A string is shown by its kind only: it is likely a key.
      throw new TypeError(
        `${where}: keys must be an array of API keys (one key is [key]), got ${typeof keys === 'string' ? 'a string (not shown)' : describeValue(keys)}`,
      )
    }
    for (let i = 0; i < keys.length; i++) {
      if (typeof keys[i] !== 'string') {
        throw refused(`${where}: keys[${i}]`, 'a string (an API key)', keys[i])
      }
    }
  }
  if (deadline !== undefined && !isDeadline(deadline)) {
    throw refused(`${where}: deadline`, 'a Deadline (Deadline.after(ms))', deadline)
  }
  if (signal !== undefined && !isAbortSignal(signal)) {
    throw refused(`${where}: signal`, 'an AbortSignal (controller.signal)', signal)
  }
}

/** A `TypeError` whatever the value: each of these fields takes no number. */
function refused(name: string, rule: string, value: unknown): TypeError {
  return new TypeError(`${name} must be ${rule}, got ${describeValue(value)}`)
}
