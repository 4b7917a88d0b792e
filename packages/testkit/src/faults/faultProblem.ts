import { refuseUnknownOptions } from '@hourglass/core'
import {
  countProblem,
  delayProblem,
  headersProblem,
  shown as show,
  statusProblem,
} from '../fieldProblems.js'
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
  if ('delayMs' in f) problems.push(delayProblem('delayMs', f['delayMs']))
  switch (fault.type) {
    case 'respond':
      problems.push(statusProblem(f['status']), headersProblem(f['headers']), body(f))
      break
    case 'stream':
      problems.push(
        statusProblem(f['status']),
        countProblem('chunks', f['chunks'], true),
        delayProblem('intervalMs', f['intervalMs'], true),
        countProblem('chunkBytes', f['chunkBytes']),
      )
      break
    case 'headers-then-stall':
      problems.push(statusProblem(f['status']), headersProblem(f['headers']))
      break
    case 'bytes-then-stall':
      problems.push(
        countProblem('bytes', f['bytes'], true),
        countProblem('declaredBytes', f['declaredBytes']),
        stallProblem(f['bytes'], f['declaredBytes']),
      )
      break
    case 'retry-after':
      problems.push(
        statusProblem(f['status'], true),
        headersProblem(f['headers']),
        body(f),
        retryAfter(f['retryAfter']),
      )
      break
  }
  return problems.find((problem) => problem !== undefined)
}

function body(f: Record<string, unknown>): string | undefined {
  const value = f['body']
  if (value === undefined || typeof value === 'string') return undefined
  return `body must be a string, got ${show(value)}`
}

function retryAfter(value: unknown): string | undefined {
  if (typeof value === 'number' && Number.isFinite(value) && value >= 0) return undefined
  if (value instanceof Date && !Number.isNaN(value.getTime())) return undefined
  return `retryAfter must be seconds ≥ 0 or a valid Date, got ${show(value)}`
}

/**
 * A `declaredBytes` not above `bytes`: the body is complete (or overruns its
 * content-length) and nothing stalls — the client got a whole answer while
 * the record said the request never finished.
 */
function stallProblem(bytes: unknown, declared: unknown): string | undefined {
  if (typeof bytes !== 'number' || typeof declared !== 'number' || declared > bytes)
    return undefined
  return `declaredBytes (${declared}) must be more than bytes (${bytes}): the body would be complete (or overrun its content-length), and nothing would stall`
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
