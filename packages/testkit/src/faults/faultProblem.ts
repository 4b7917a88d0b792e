import { validateHeaderName, validateHeaderValue } from 'node:http'
import { refuseUnknownOptions } from '@hourglass/core'
import type { Fault } from './Fault.js'

/** The fields each kind of Fault reads: any other is a typo (`delayMS`) that changed nothing. */
const FIELDS: Record<Fault['type'], readonly string[]> = {
  respond: ['type', 'status', 'headers', 'body', 'delayMs'],
  stream: ['type', 'chunks', 'intervalMs', 'chunkBytes', 'status', 'delayMs'],
  'headers-then-stall': ['type', 'status', 'headers', 'delayMs'],
  'bytes-then-stall': ['type', 'bytes', 'declaredBytes', 'delayMs'],
  close: ['type', 'delayMs'],
  reset: ['type', 'delayMs'],
  'retry-after': ['type', 'status', 'retryAfter', 'body', 'headers'],
  hang: ['type'],
}

/**
 * What is wrong with a fault's fields, or undefined when nothing is. Unchecked,
 * `status: 1000`, a header value with a newline or `body: 123` threw inside
 * the fault's timer: an uncaught exception, and a request that hung until the
 * test timed out.
 */
export function faultProblem(fault: Fault): string | undefined {
  const f = fault as Record<string, unknown>
  const problems: (string | undefined)[] = [unknownField(fault)]
  if ('delayMs' in f) problems.push(delay(f, 'delayMs'))
  switch (fault.type) {
    case 'respond':
      problems.push(status(f), headers(f), body(f))
      break
    case 'stream':
      problems.push(
        status(f),
        count(f, 'chunks', true),
        delay(f, 'intervalMs', true),
        count(f, 'chunkBytes'),
      )
      break
    case 'headers-then-stall':
      problems.push(status(f), headers(f))
      break
    case 'bytes-then-stall':
      problems.push(count(f, 'bytes', true), count(f, 'declaredBytes'))
      break
    case 'retry-after':
      problems.push(status(f, true), headers(f), body(f), retryAfter(f['retryAfter']))
      break
  }
  return problems.find((problem) => problem !== undefined)
}

function status(f: Record<string, unknown>, required = false): string | undefined {
  const value = f['status']
  if (value === undefined && !required) return undefined
  // The range node:http's writeHead takes.
  if (typeof value === 'number' && Number.isInteger(value) && value >= 100 && value <= 999) {
    return undefined
  }
  return `status must be an HTTP status (a whole number 100–999), got ${show(value)}`
}

function headers(f: Record<string, unknown>): string | undefined {
  const value = f['headers']
  if (value === undefined) return undefined
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return `headers must be an object of header names to strings, got ${show(value)}`
  }
  for (const [name, text] of Object.entries(value)) {
    if (typeof text !== 'string') {
      return `headers[${JSON.stringify(name)}] must be a string, got ${show(text)}`
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

function body(f: Record<string, unknown>): string | undefined {
  const value = f['body']
  if (value === undefined || typeof value === 'string') return undefined
  return `body must be a string, got ${show(value)}`
}

function delay(f: Record<string, unknown>, name: string, required = false): string | undefined {
  const value = f[name]
  if (value === undefined && !required) return undefined
  if (typeof value === 'number' && Number.isFinite(value) && value >= 0) return undefined
  return `${name} must be a number of ms ≥ 0, got ${show(value)}`
}

function count(f: Record<string, unknown>, name: string, required = false): string | undefined {
  const value = f[name]
  if (value === undefined && !required) return undefined
  if (typeof value === 'number' && Number.isInteger(value) && value >= 0) return undefined
  return `${name} must be a whole number ≥ 0, got ${show(value)}`
}

function retryAfter(value: unknown): string | undefined {
  if (typeof value === 'number' && Number.isFinite(value) && value >= 0) return undefined
  if (value instanceof Date && !Number.isNaN(value.getTime())) return undefined
  return `retryAfter must be seconds ≥ 0 or a valid Date, got ${show(value)}`
}

function show(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.slice(0, 40))
  if (value instanceof Date) return 'an invalid Date'
  if (typeof value === 'object' && value !== null)
    return Array.isArray(value) ? 'an array' : 'an object'
  return String(value)
}

/** A field this kind of Fault does not read (`{ type: 'respond', delayMS: 100 }` had no delay), with the one probably meant. */
function unknownField(fault: Fault): string | undefined {
  const names = FIELDS[fault.type]
  if (names === undefined) return undefined
  try {
    refuseUnknownOptions(fault, names, `a ${fault.type} Fault`, { what: 'field' })
    return undefined
  } catch (error) {
    return (error as Error).message
  }
}
