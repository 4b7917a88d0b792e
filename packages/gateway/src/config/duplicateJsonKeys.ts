import type { ConfigProblem } from './GatewayConfigError.js'
import { fieldPath } from './parseGatewayConfig.js'

interface Frame {
  /** An object's keys so far; undefined for an array. */
  keys: Set<string> | undefined
  /** The element an array is at, or the key an object is at: what leads on to the frame above. */
  index: number
  key: string | undefined
}

/**
 * Repeats listed one by one; the rest counted in one line: each builds its
 * path, so 5,000 repeats 5,000 deep took 14 s and 1.4 GB, and their report
 * was a 75 MB message.
 */
const MAX_REPEATS_SHOWN = 20

/**
 * Every key written twice in one object of a JSON text that `JSON.parse`
 * has already accepted. JSON.parse keeps the last and drops the first
 * without a word: a provider block copied and edited but not renamed
 * replaced the first (its dialect, URL, keys and limits), a model written
 * twice lost its first fallback list, a `limits` written twice its first
 * limit — and the config loaded. One problem per repeat, at its path.
 */
export function duplicateJsonKeys(text: string): ConfigProblem[] {
  const problems: ConfigProblem[] = []
  let repeats = 0
  const stack: Frame[] = []
  let expectingKey = false
  let i = 0
  // The path to the object on top, built only for a repeat: copied into
  // every frame, it made the scan quadratic in the nesting depth (a 20 KB
  // file of nested arrays took 2.8 s and 621 MB; JSON.parse, 3 ms).
  const pathHere = (): PropertyKey[] =>
    stack.slice(0, -1).map((f) => (f.keys === undefined ? f.index : (f.key ?? '')))
  while (i < text.length) {
    const c = text[i]
    if (c === '{' || c === '[') {
      stack.push({ keys: c === '{' ? new Set() : undefined, index: 0, key: undefined })
      expectingKey = c === '{'
      i++
    } else if (c === '}' || c === ']') {
      stack.pop()
      expectingKey = false
      i++
    } else if (c === ',') {
      const top = stack.at(-1)
      if (top?.keys !== undefined) expectingKey = true
      else if (top !== undefined) top.index++
      i++
    } else if (c === '"') {
      const start = i++
      while (text[i] !== '"') i += text[i] === '\\' ? 2 : 1
      i++
      const top = stack.at(-1)
      if (expectingKey && top?.keys !== undefined) {
        // Decoded, as JSON.parse compares them: "a" and "\u0061" are one key.
        const key = JSON.parse(text.slice(start, i)) as string
        if (top.keys.has(key) && ++repeats <= MAX_REPEATS_SHOWN) {
          problems.push({
            field: fieldPath([...pathHere(), key]),
            message:
              'written twice in one object: JSON keeps the last and drops the first without a word (rename one, or merge them)',
          })
        }
        top.keys.add(key)
        top.key = key
        expectingKey = false
      }
    } else i++
  }
  if (repeats > MAX_REPEATS_SHOWN) {
    problems.push({
      field: '(json)',
      message: `${repeats - MAX_REPEATS_SHOWN} more keys written twice (the first ${MAX_REPEATS_SHOWN} are listed)`,
    })
  }
  return problems
}
