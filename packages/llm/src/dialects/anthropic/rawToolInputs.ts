/**
 * The text of each `tool_use` block's `input` in a Messages API body, by the
 * block's position in `content`: what the model wrote, before parsing
 * rounded an integer past 2^53 in it (a tweet id `1859312345678901234`
 * reads `…200`, an order `9007199254740993` reads `…992`). A streamed
 * answer keeps that text (its `partial_json` pieces); a whole one had only
 * the parsed object, so the same answer called the tool with another id
 * depending on `stream`.
 *
 * For a body `JSON.parse` has read: the text is valid JSON, so the walk
 * checks nothing. Walked, not recursed (an `input` nests as deep as a
 * model writes it); keys are compared decoded, and a repeated key is read
 * as `JSON.parse` reads it, the last one winning.
 */
export function rawToolInputs(text: string): Map<number, string> {
  const inputs = new Map<number, string>()
  const start = skipSpace(text, 0)
  if (text.charCodeAt(start) !== OPEN_BRACE) return inputs
  forEachMember(text, start, (key, at) => {
    if (key !== 'content' || text.charCodeAt(at) !== OPEN_BRACKET) return
    inputs.clear()
    let i = skipSpace(text, at + 1)
    if (text.charCodeAt(i) === CLOSE_BRACKET) return
    for (let block = 0; ; block++) {
      if (text.charCodeAt(i) === OPEN_BRACE) {
        forEachMember(text, i, (field, from) => {
          if (field === 'input') inputs.set(block, text.slice(from, valueEnd(text, from)))
        })
      }
      i = skipSpace(text, valueEnd(text, i))
      if (text.charCodeAt(i) !== COMMA) return
      i = skipSpace(text, i + 1)
    }
  })
  return inputs
}

const QUOTE = 0x22
const BACKSLASH = 0x5c
const COMMA = 0x2c
const COLON = 0x3a
const OPEN_BRACE = 0x7b
const CLOSE_BRACE = 0x7d
const OPEN_BRACKET = 0x5b
const CLOSE_BRACKET = 0x5d

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09
}

function skipSpace(text: string, i: number): number {
  while (i < text.length && isSpace(text.charCodeAt(i))) i++
  return i
}

/** `i` at a string's opening quote: the index just past its closing one. */
function stringEnd(text: string, i: number): number {
  i++
  while (i < text.length) {
    const c = text.charCodeAt(i)
    if (c === QUOTE) return i + 1
    i += c === BACKSLASH ? 2 : 1
  }
  return i
}

/** `i` at a value's first character: the index just past the value. */
function valueEnd(text: string, i: number): number {
  const first = text.charCodeAt(i)
  if (first === QUOTE) return stringEnd(text, i)
  if (first === OPEN_BRACE || first === OPEN_BRACKET) {
    let depth = 0
    while (i < text.length) {
      const c = text.charCodeAt(i)
      if (c === QUOTE) {
        i = stringEnd(text, i)
        continue
      }
      if (c === OPEN_BRACE || c === OPEN_BRACKET) depth++
      else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
        depth--
        if (depth === 0) return i + 1
      }
      i++
    }
    return i
  }
  // A number, `true`, `false` or `null`: up to what ends it.
  while (i < text.length) {
    const c = text.charCodeAt(i)
    if (c === COMMA || c === CLOSE_BRACE || c === CLOSE_BRACKET || isSpace(c)) break
    i++
  }
  return i
}

/** Calls `visit` with each member's decoded key and the index of its value, for the object at `i`. */
function forEachMember(text: string, i: number, visit: (key: string, at: number) => void): void {
  i = skipSpace(text, i + 1)
  while (text.charCodeAt(i) === QUOTE) {
    const keyEnd = stringEnd(text, i)
    const raw = text.slice(i + 1, keyEnd - 1)
    const key = raw.includes('\\') ? (JSON.parse(`"${raw}"`) as string) : raw
    i = skipSpace(text, keyEnd)
    if (text.charCodeAt(i) !== COLON) return
    const at = skipSpace(text, i + 1)
    visit(key, at)
    i = skipSpace(text, valueEnd(text, at))
    if (text.charCodeAt(i) !== COMMA) return
    i = skipSpace(text, i + 1)
  }
}
