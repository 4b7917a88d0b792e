/**
 * A step of a path into JSON: an object's member by key, an array's element
 * by index, or `EACH` element of an array.
 */
export type JsonPathStep = string | number | typeof EACH

/** Every element of an array: the element's index is one of the value's `indexes`. */
export const EACH: unique symbol = Symbol('each element')

/** One value found: its text as written, and the index taken at each `EACH` on its way. */
export interface RawJsonValue {
  readonly indexes: readonly number[]
  readonly text: string
}

/**
 * The text of the values at `path` in the JSON `text`, as written: what a
 * model wrote before parsing rounded an integer past 2^53 in it (a tweet id
 * `1859312345678901234` reads `…200`, an order `9007199254740993` reads
 * `…992`). Anthropic's `tool_use.input` and Gemini's `functionCall.args`
 * travel as JSON objects inside the body, so the parsed body alone no
 * longer says what the model wrote; its text does.
 *
 * For a text `JSON.parse` has read: it is valid JSON, so the walk checks
 * nothing. Walked, not recursed, inside values (a model's arguments nest as
 * deep as it writes them); the recursion is on `path`, as deep as the
 * caller wrote it. Keys are compared decoded, and a repeated key is read as
 * `JSON.parse` reads it, the last one winning. Values in document order.
 */
export function rawJsonValues(text: string, path: readonly JsonPathStep[]): RawJsonValue[] {
  const found: RawJsonValue[] = []
  collect(text, skipSpace(text, 0), path, 0, [], found)
  return found
}

function collect(
  text: string,
  at: number,
  path: readonly JsonPathStep[],
  step: number,
  indexes: readonly number[],
  found: RawJsonValue[],
): void {
  if (step === path.length) {
    found.push({ indexes, text: text.slice(at, valueEnd(text, at)) })
    return
  }
  const want = path[step]
  if (typeof want === 'string') {
    if (text.charCodeAt(at) !== OPEN_BRACE) return
    // The last member of that key is the one parsing kept.
    let last: number | undefined
    forEachMember(text, at, (key, value) => {
      if (key === want) last = value
    })
    if (last !== undefined) collect(text, last, path, step + 1, indexes, found)
    return
  }
  if (text.charCodeAt(at) !== OPEN_BRACKET) return
  forEachElement(text, at, (index, value) => {
    if (want === EACH) collect(text, value, path, step + 1, [...indexes, index], found)
    else if (want === index) collect(text, value, path, step + 1, indexes, found)
  })
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

/** Calls `visit` with each element's index and the index of its first character, for the array at `i`. */
function forEachElement(text: string, i: number, visit: (index: number, at: number) => void): void {
  i = skipSpace(text, i + 1)
  if (i >= text.length || text.charCodeAt(i) === CLOSE_BRACKET) return
  for (let index = 0; ; index++) {
    visit(index, i)
    i = skipSpace(text, valueEnd(text, i))
    if (text.charCodeAt(i) !== COMMA) return
    i = skipSpace(text, i + 1)
  }
}
