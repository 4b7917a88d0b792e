/**
 * The most keys one JSON object of a request body may have. Past about a
 * thousand, V8 keeps an object as a hash table: every step that touches
 * its keys — `JSON.parse`, the schema, the depth walk, the JSON text sent
 * upstream — costs a few microseconds per key, and one 300,000-key object in
 * a 4 MiB body cost the gateway over a second of CPU. OpenAI's own limits
 * (16 `metadata` keys, 300 `logit_bias` tokens, 5,000 properties in a whole
 * structured-output schema) sit far below.
 */
export const MAX_KEYS_PER_OBJECT = 1_000

/**
 * The most distinct key names a request body may use. Each new name costs
 * `JSON.parse` an interned string and a new object shape (1–3 µs), so 3,000
 * objects of 100 keys each, every name new, cost as much as the one huge
 * object. A real request repeats a few dozen names (`role`, `content`, a
 * schema's `type` and `properties`) and its schemas' property names.
 */
export const MAX_KEY_NAMES = 20_000

/**
 * Why `text` (a JSON body, before it is parsed) is refused for its keys, or
 * `undefined`. One pass with no allocation but a number per open object
 * and a number per distinct name, so a refused body costs a few
 * milliseconds instead of its parse. A string is skipped with `indexOf`
 * (native: a long message costs next to nothing, where reading it a
 * character at a time cost several times `JSON.parse` of the whole body);
 * it is a key when the next character that is not white space is `:`, and
 * only keys are hashed. Text that is not JSON is counted as well as it can
 * be and left to `JSON.parse` to refuse — which fails at the first thing
 * that is not JSON, so what it parses before that is counted right. Names
 * are told apart by a 32-bit hash of their raw text: a collision only
 * undercounts, and `"\u0061"` and `"a"` count as two.
 */
export function keyLimitProblem(text: string): string | undefined {
  // Each key takes at least 5 characters (`"":0,`): a shorter body is within both limits.
  if (text.length <= 5 * MAX_KEYS_PER_OBJECT) return undefined
  const open: number[] = [] // keys so far of each object still open
  const names = new Set<number>()
  const end = text.length
  for (let i = 0; i < end; i++) {
    const c = text.charCodeAt(i)
    if (c === 0x22) {
      const close = closingQuote(text, i + 1)
      if (close === -1) return undefined // unterminated: JSON.parse refuses it
      let next = close + 1
      while (next < end && isWhiteSpace(text.charCodeAt(next))) next++
      if (text.charCodeAt(next) === 0x3a) {
        const top = open.length - 1
        const keys = (open[top] ?? 0) + 1
        if (top >= 0) open[top] = keys
        if (keys > MAX_KEYS_PER_OBJECT) {
          return `an object in the body has more than ${MAX_KEYS_PER_OBJECT} keys (the gateway's limit)`
        }
        names.add(hashOf(text, i + 1, close))
        if (names.size > MAX_KEY_NAMES) {
          return `the body uses more than ${MAX_KEY_NAMES} distinct key names (the gateway's limit)`
        }
        i = next
      } else {
        i = close
      }
    } else if (c === 0x7b) {
      open.push(0)
    } else if (c === 0x7d) {
      open.pop()
    }
  }
  return undefined
}

/** The index of the `"` that ends the string whose text starts at `from`, or -1. */
function closingQuote(text: string, from: number): number {
  let at = text.indexOf('"', from)
  while (at !== -1) {
    // Escaped when an odd number of backslashes stands before it.
    let slashes = 0
    while (text.charCodeAt(at - 1 - slashes) === 0x5c) slashes++
    if (slashes % 2 === 0) return at
    at = text.indexOf('"', at + 1)
  }
  return -1
}

function isWhiteSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09
}

/** FNV-1a over the raw characters of `text` from `start` to `end` (escapes as written). */
function hashOf(text: string, start: number, end: number): number {
  let h = 0x811c9dc5
  for (let i = start; i < end; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193)
  return h
}
