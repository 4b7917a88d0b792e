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
    ...STRINGS.map((name) => stringProblem(name, r[name])),
    tokensProblem(r['tokens']),
    toolCallsProblem(r['toolCalls']),
  ].find((p) => p !== undefined)
  if (problem !== undefined) throw new TypeError(`${where}: ${problem}`)
}

/**
 * What a text reply sends as written. Unchecked, `reply.text(42)` or a
 * `model: 5` read from a fixture passed every check and the request got the
 * fake's 500 (`text.match is not a function`), not the scripted answer.
 */
const STRINGS = ['text', 'thinking', 'signature', 'model']

function stringProblem(name: string, value: unknown): string | undefined {
  return value === undefined || typeof value === 'string'
    ? undefined
    : `${name} must be a string, got ${shown(value)}`
}

function tokensProblem(value: unknown): string | undefined {
  if (value === undefined) return undefined
  return Array.isArray(value) && value.every((token) => typeof token === 'string')
    ? undefined
    : `tokens must be an array of strings, got ${shown(value)}`
}

/**
 * A call with no name went out 200 with no `function.name`, and an
 * `argumentsJson` that was no string as a number where the wire has text.
 */
function toolCallsProblem(value: unknown): string | undefined {
  if (value === undefined) return undefined
  if (!Array.isArray(value)) {
    return `toolCalls must be an array of { name, arguments }, got ${shown(value)}`
  }
  for (const [i, call] of value.entries()) {
    if (typeof call !== 'object' || call === null) {
      return `toolCalls[${i}] must be { name, arguments }, got ${shown(call)}`
    }
    const c = call as Record<string, unknown>
    if (typeof c['name'] !== 'string' || c['name'] === '') {
      return `toolCalls[${i}].name must be a non-empty string, got ${shown(c['name'])}`
    }
    if (c['argumentsJson'] !== undefined && typeof c['argumentsJson'] !== 'string') {
      return `toolCalls[${i}].argumentsJson must be a string (the arguments' JSON text), got ${shown(c['argumentsJson'])}`
    }
    if (c['id'] !== undefined && typeof c['id'] !== 'string') {
      return `toolCalls[${i}].id must be a string, got ${shown(c['id'])}`
    }
  }
  return undefined
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
