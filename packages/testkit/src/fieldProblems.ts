import { validateHeaderName, validateHeaderValue } from 'node:http'

/**
 * What is wrong with one field of a scripted answer (a fake provider's reply,
 * a fault server's fault), or undefined when nothing is: the checks both make
 * before anything is sent, worded alike. A field left undefined passes unless
 * `required`.
 */

/** A delay: a number of ms ≥ 0, as the fakes' waits take. */
export function delayProblem(name: string, value: unknown, required = false): string | undefined {
  if (value === undefined && !required) return undefined
  if (typeof value === 'number' && Number.isFinite(value) && value >= 0) return undefined
  return `${name} must be a number of ms ≥ 0, got ${shown(value)}`
}

/** A count (bytes, chunks, tokens): a whole number ≥ 0. */
export function countProblem(name: string, value: unknown, required = false): string | undefined {
  if (value === undefined && !required) return undefined
  if (typeof value === 'number' && Number.isInteger(value) && value >= 0) return undefined
  return `${name} must be a whole number ≥ 0, got ${shown(value)}`
}

/** A status: the range node:http's writeHead takes. */
export function statusProblem(value: unknown, required = false): string | undefined {
  if (value === undefined && !required) return undefined
  if (typeof value === 'number' && Number.isInteger(value) && value >= 100 && value <= 999) {
    return undefined
  }
  return `status must be an HTTP status (a whole number 100–999), got ${shown(value)}`
}

/** Headers: an object of names to strings node:http can send (no newline in a value). */
export function headersProblem(value: unknown): string | undefined {
  if (value === undefined) return undefined
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return `headers must be an object of header names to strings, got ${shown(value)}`
  }
  for (const [name, text] of Object.entries(value)) {
    if (typeof text !== 'string') {
      return `headers[${JSON.stringify(name)}] must be a string, got ${shown(text)}`
    }
    try {
      validateHeaderName(name)
      validateHeaderValue(name, text)
    } catch (error) {
      return `headers[${JSON.stringify(name)}] cannot be sent: ${(error as Error).message}`
    }
  }
  return undefined
}

/** A value as these messages show it: a string quoted and cut, an object by its kind. */
export function shown(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.slice(0, 40))
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? 'an invalid Date' : 'a Date'
  if (typeof value === 'object' && value !== null)
    return Array.isArray(value) ? 'an array' : 'an object'
  return String(value)
}
