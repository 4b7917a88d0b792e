import {
  countProblem,
  delayProblem,
  headersProblem,
  shown,
  statusProblem,
} from '../fieldProblems.js'

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
    ...DELAYS.map((name) => delayProblem(name, r[name])),
    ...COUNTS.map((name) => countProblem(name, r[name])),
    r['kind'] === 'error' ? statusProblem(r['status']) : undefined,
    headersProblem(r['headers']),
    streamError(r['streamError']),
  ].find((p) => p !== undefined)
  if (problem !== undefined) throw new TypeError(`${where}: ${problem}`)
}

/** Every delay any reply kind takes: in ms, as `pause` waits them. */
const DELAYS = ['latencyMs', 'firstTokenDelayMs', 'tokenDelayMs', 'keepAliveEveryMs', 'writeGapMs']

/** Whole numbers: bytes per write (0 = unsplit) and the tokens before a cut. */
const COUNTS = ['splitBytes', 'cutAfterTokens']

function streamError(value: unknown): string | undefined {
  if (value === undefined) return undefined
  if (typeof value !== 'object' || value === null) {
    return `streamError must be { afterTokens, body, status? }, got ${shown(value)}`
  }
  const e = value as Record<string, unknown>
  const after = e['afterTokens']
  if (typeof after !== 'number' || !Number.isInteger(after) || after < 0) {
    return `streamError.afterTokens must be a whole number ≥ 0, got ${shown(after)}`
  }
  const body = e['body']
  // Left out, the frame read `data: undefined`.
  if (body === undefined) {
    return 'streamError.body must be the error payload (an object, sent as JSON, or a string, sent as written), got undefined'
  }
  // A string goes out as written, on one SSE `data:` line: a line break would end the frame early.
  if (typeof body === 'string' && /[\r\n]/.test(body)) {
    return `streamError.body must be one line when it is a string (it is one SSE data line), got ${shown(body)}`
  }
  if (e['status'] === undefined) return undefined
  const wrong = statusProblem(e['status'])
  return wrong === undefined ? undefined : `streamError.${wrong}`
}
