import { MAX_JSON_BODY_CHARS, parseJson } from './safeJson.js'

/** What an SSE-framed body holds: the first event whose data is JSON, parsed, and its text. */
export interface FramedJson {
  json: unknown
  /** The event's data (its `data:` lines joined), the JSON's text. */
  text: string
}

/**
 * Events whose data is tried as JSON, at most: an error body frames its error
 * in its first event or two, and a hostile body of 100,000 `data: {` events
 * must not cost 100,000 failed parses.
 */
const MAX_EVENTS_TRIED = 8

/** The field names of SSE (and a comment, `:`): a framed body starts with one of them. */
const FIELD_START = /^(?:data|event|id|retry)(?::|\r|\n|$)|^:/

/**
 * An error answer to a streaming request can come SSE-framed — DashScope
 * answers a filtered input with HTTP 400 and `data: {"error":{…}}` — where
 * only JSON was expected. Reads such a body as the JSON of its first event
 * whose data parses as JSON (a `data:` line, or several joined with `\n`, as
 * the SSE spec joins them), among its first eight events with data. Anything else — a body that does not start with
 * an SSE field or comment, no event holding JSON, a body over the JSON size
 * limit — is `undefined`: the status classifies it, as before. Linear in the
 * body's length and never throws.
 */
export function parseSseFramedJson(body: string): FramedJson | undefined {
  if (typeof body !== 'string' || body.length === 0 || body.length > MAX_JSON_BODY_CHARS) {
    return undefined
  }
  const text = body.charCodeAt(0) === 0xfeff ? body.slice(1) : body
  const start = text.trimStart()
  if (!FIELD_START.test(start)) return undefined
  let data: string[] = []
  let tried = 0
  const dispatch = (): FramedJson | undefined => {
    if (data.length === 0) return undefined
    const joined = data.join('\n')
    data = []
    tried++
    const json = parseJson(joined)
    return json === undefined ? undefined : { json, text: joined }
  }
  // Line by line, not `split`: a body of 100,000 one-line events was cut
  // into an array of every line to read its first eight events.
  const lineEnd = /\r\n|\r|\n/g
  for (let at = 0; at <= start.length; ) {
    const end = lineEnd.exec(start)
    const line = start.slice(at, end === null ? start.length : end.index)
    at = end === null ? start.length + 1 : end.index + end[0].length
    if (line === '') {
      const found = dispatch()
      if (found !== undefined) return found
      if (tried >= MAX_EVENTS_TRIED) return undefined
      continue
    }
    // `field: value` (one space after the colon is not part of the value),
    // `field` alone (an empty value); comments and other fields are skipped.
    if (line.startsWith('data')) {
      const rest = line.slice(4)
      if (rest === '') data.push('')
      else if (rest[0] === ':') data.push(rest[1] === ' ' ? rest.slice(2) : rest.slice(1))
    }
  }
  // A body is whole: its last event counts without the closing blank line.
  return dispatch()
}
