import { validateHeaderName, validateHeaderValue } from 'node:http'

/**
 * Refuses a reply whose numbers or headers cannot be sent, where the test
 * writes it (`reply.text()`, `reply.error()`, `reply.hang()`, `enqueue`,
 * `setReply`; a script function's reply when the fake sends it, as a 500
 * `reply_failed`). Unchecked, a delay that was no number (`tokenDelayMs:
 * '50'`, read from an environment variable) made the fake's wait reject,
 * which it read as the client leaving: the reply stopped where it was, the
 * response was never ended and the request stayed `pending` — a hang the
 * test had not scripted. A negative delay or count was read as 0 or as "cut
 * at once"; a `status: 1000` or a header with a newline failed inside
 * `writeHead`, and the client got the fake's 500 instead of the reply.
 */
export function checkReplyFields(where: string, reply: object): void {
  const r = reply as Record<string, unknown>
  const problem = [
    ...DELAYS.map((name) => delay(r, name)),
    ...COUNTS.map((name) => count(r, name)),
    r['kind'] === 'error' ? status(r['status']) : undefined,
    headers(r['headers']),
    streamError(r['streamError']),
  ].find((p) => p !== undefined)
  if (problem !== undefined) throw new TypeError(`${where}: ${problem}`)
}

/** Every delay any reply kind takes: in ms, as `pause` waits them. */
const DELAYS = ['latencyMs', 'firstTokenDelayMs', 'tokenDelayMs', 'keepAliveEveryMs', 'writeGapMs']

/** Whole numbers: bytes per write (0 = unsplit) and the tokens before a cut. */
const COUNTS = ['splitBytes', 'cutAfterTokens']

function delay(r: Record<string, unknown>, name: string): string | undefined {
  const value = r[name]
  if (value === undefined || (typeof value === 'number' && Number.isFinite(value) && value >= 0)) {
    return undefined
  }
  return `${name} must be a number of ms ≥ 0, got ${show(value)}`
}

function count(r: Record<string, unknown>, name: string): string | undefined {
  const value = r[name]
  if (value === undefined || (typeof value === 'number' && Number.isInteger(value) && value >= 0)) {
    return undefined
  }
  return `${name} must be a whole number ≥ 0, got ${show(value)}`
}

function status(value: unknown): string | undefined {
  // The range node:http's writeHead takes.
  if (typeof value === 'number' && Number.isInteger(value) && value >= 100 && value <= 999) {
    return undefined
  }
  return `status must be an HTTP status (a whole number 100–999), got ${show(value)}`
}

function headers(value: unknown): string | undefined {
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

function streamError(value: unknown): string | undefined {
  if (value === undefined) return undefined
  if (typeof value !== 'object' || value === null) {
    return `streamError must be { afterTokens, body, status? }, got ${show(value)}`
  }
  const e = value as Record<string, unknown>
  const after = e['afterTokens']
  if (typeof after !== 'number' || !Number.isInteger(after) || after < 0) {
    return `streamError.afterTokens must be a whole number ≥ 0, got ${show(after)}`
  }
  if (e['status'] === undefined) return undefined
  const wrong = status(e['status'])
  return wrong === undefined ? undefined : `streamError.${wrong}`
}

function show(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.slice(0, 40))
  if (typeof value === 'object' && value !== null)
    return Array.isArray(value) ? 'an array' : 'an object'
  return String(value)
}
