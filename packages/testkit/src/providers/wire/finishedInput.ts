/**
 * The input of a tool call the token cap cut inside its arguments, as an
 * unstreamed Anthropic answer carries it: a JSON object (`tool_use.input`
 * cannot be text) holding the top-level members the model finished writing,
 * `{}` when none. `written` is the arguments' text so far; the result is a
 * prefix of it, closed, so its numbers keep their digits (see `RawJson`).
 *
 * A member is finished once a top-level comma follows it, or when the text
 * stops right after a string, object or array closed at the top level
 * (those cannot go on; a number or literal might: `1` of `12`).
 */
export function finishedInput(written: string): string {
  const ends: number[] = []
  let depth = 0
  let inString = false
  for (let i = 0; i < written.length; i++) {
    const c = written[i]
    if (inString) {
      if (c === '\\') i++
      else if (c === '"') {
        inString = false
        if (depth === 1) ends.push(i + 1)
      }
    } else if (c === '"') inString = true
    else if (c === '{' || c === '[') depth++
    else if (c === '}' || c === ']') {
      depth--
      if (depth === 1) ends.push(i + 1)
    } else if (c === ',' && depth === 1) ends.push(i)
  }
  // The latest candidate that closes into an object wins: a string end that
  // was a key (`{"a"`) does not parse and falls back to the member before.
  // Only the last two are tried: a well-formed prefix needs no more (a
  // trailing key's end, then the member's end before it), and parsing
  // every candidate made malformed arguments quadratic (a 42 K-character
  // array took 1.9 s, a 185 K one 57 s, with the fake's event loop held).
  for (const end of ends.reverse().slice(0, 2)) {
    const text = `${written.slice(0, end)}}`
    if (isObject(text)) return text
  }
  return '{}'
}

function isObject(text: string): boolean {
  try {
    const value: unknown = JSON.parse(text)
    return typeof value === 'object' && value !== null && !Array.isArray(value)
  } catch {
    return false
  }
}
