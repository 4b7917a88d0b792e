import { closingQuote } from './jsonString.js'

/**
 * How deep a request body may nest, counted before it is parsed. Free-form
 * JSON may nest 64 levels (`MAX_JSON_DEPTH`), below at most a few levels of
 * the request's own structure (`tools[0].function.parameters`): a body
 * deeper than this is refused whatever the schema would say, and its
 * parse is never paid. `JSON.parse` of a 4 MiB body of `[` — two million
 * levels, within the size limit — held the event loop 1.3 s and built 55 MB
 * of arrays before the depth check could refuse it: every other request's
 * deadline went by meanwhile.
 */
export const MAX_BODY_DEPTH = 256

/**
 * The top-level field of `text` (a JSON body, before it is parsed) that
 * nests deeper than `MAX_BODY_DEPTH`, `body` when the excess is not inside
 * one (a body that is itself a deep array), or `undefined` when none does.
 * One pass: strings are skipped with `indexOf` (native: a long message costs
 * next to nothing), brackets counted. Text that is not JSON is counted as
 * well as it can be and left to `JSON.parse` to refuse.
 */
export function tooDeepField(text: string): string | undefined {
  // Every level takes a character at least: a shorter body cannot be too deep.
  if (text.length <= MAX_BODY_DEPTH) return undefined
  let depth = 0
  // Where the last string that ended at depth 1 starts and ends: a top-level key once `:` follows.
  let keyStart = -1
  let keyEnd = -1
  let field: string | undefined
  const end = text.length
  for (let i = 0; i < end; i++) {
    const c = text.charCodeAt(i)
    if (c === 0x22) {
      const close = closingQuote(text, i + 1)
      if (close === -1) return undefined // unterminated: JSON.parse refuses it
      if (depth === 1) {
        keyStart = i
        keyEnd = close + 1
      }
      i = close
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > MAX_BODY_DEPTH) return field ?? 'body'
    } else if (c === 0x5d || c === 0x7d) {
      depth--
      if (depth <= 0) field = undefined
    } else if (c === 0x3a && depth === 1 && keyStart !== -1) {
      field = keyOf(text.slice(keyStart, keyEnd))
      keyStart = -1
    } else if (c === 0x2c && depth === 1) {
      field = undefined
    }
  }
  return undefined
}

/** A key's text as JSON decodes it; `body` when it does not decode (JSON.parse refuses the body anyway). */
export function keyOf(quoted: string): string {
  try {
    return JSON.parse(quoted) as string
  } catch {
    return 'body'
  }
}
