/**
 * The most keys one JSON object of a request body may have. Past about a
 * thousand, V8 keeps an object as a hash table: every step that touches
 * its keys — `JSON.parse`, the schema, the depth walk, the JSON text sent
 * upstream — costs a few microseconds per key, and one 300,000-key object in
 * a 4 MiB body cost the gateway over a second of CPU. Twice what OpenAI
 * takes in a whole structured-output schema (5,000 properties), so a valid
 * schema of one large object still passes.
 */
export const MAX_KEYS_PER_OBJECT = 10_000

/**
 * The most distinct key sequences a request body may hold: one for each
 * key that follows a different run of keys before it in its object — what
 * costs `JSON.parse` a new object shape (and, for a new name, an interned
 * string: 1–3 µs each, more again in the schema and the text sent on). A
 * chat of 20,000 messages repeats two (`role`, `content`); a schema counts
 * each property once. 3,000 objects of 100 keys, each object's keys a run
 * of its own — within a cap on keys per object and on distinct names —
 * cost as much as one 300,000-key object.
 */
export const MAX_KEY_SEQUENCES = 20_000

/**
 * Keys an object holds in V8's fast mode; past them it is a hash table,
 * whose every key costs as a new sequence does whatever the keys of other
 * objects: 48 objects of the same 9,999 keys were 9,999 sequences and cost
 * the gateway about a second. Each key past this count counts as one more.
 */
const FAST_KEYS = 1_000

/**
 * How deep the scan follows objects. Past it, keys count toward the deepest
 * object followed: the state kept stays small (three numbers a level) where a
 * 4 MiB body of `{` made it 12 million entries and two seconds before
 * `JSON.parse` refused the body at its second character. Well past the
 * depth the schema allows (64 levels of free-form JSON).
 */
const MAX_SCAN_DEPTH = 256

/**
 * Why `text` (a JSON body, before it is parsed) is refused for its keys, or
 * `undefined`. One pass with no allocation but a few numbers per open
 * object and a number per distinct key sequence, so a refused body costs
 * a few milliseconds instead of its parse. A string is skipped with
 * `indexOf` (native: a long message costs next to nothing, where reading it
 * a character at a time cost several times `JSON.parse` of the whole
 * body); it is a key when the next character that is not white space is
 * `:`, and only keys are hashed. Text that is not JSON is counted as well
 * as it can be and left to `JSON.parse` to refuse — which fails at the
 * first thing that is not JSON, so what it parses before that is counted
 * right. A sequence is told apart by two 32-bit hashes of the raw text of
 * its keys (52 bits together): a collision only undercounts, and
 * `"\u0061"` and `"a"` count as two.
 */
export function keyLimitProblem(text: string): string | undefined {
  // Each key takes at least 5 characters (`"":0,`): a shorter body is within both limits.
  if (text.length <= 5 * Math.min(MAX_KEYS_PER_OBJECT, MAX_KEY_SEQUENCES)) return undefined
  // Per open object, three numbers: its keys so far and the two hashes of their run.
  const open: number[] = []
  const sequences = new Set<number>()
  let slowKeys = 0 // keys past FAST_KEYS in their object
  let deeper = 0 // objects open past MAX_SCAN_DEPTH
  const end = text.length
  for (let i = 0; i < end; i++) {
    const c = text.charCodeAt(i)
    if (c === 0x22) {
      const close = closingQuote(text, i + 1)
      if (close === -1) return undefined // unterminated: JSON.parse refuses it
      let next = close + 1
      while (next < end && isWhiteSpace(text.charCodeAt(next))) next++
      if (text.charCodeAt(next) === 0x3a && open.length > 0) {
        const top = open.length - 3
        const keys = (open[top] as number) + 1
        if (keys > MAX_KEYS_PER_OBJECT) {
          return `an object in the body has more than ${MAX_KEYS_PER_OBJECT} keys (the gateway's limit)`
        }
        // FNV-1a and a 31-multiplier hash over the run so far and this key.
        let a = open[top + 1] as number
        let b = open[top + 2] as number
        for (let k = i + 1; k < close; k++) {
          const d = text.charCodeAt(k)
          a = Math.imul(a ^ d, 0x01000193)
          b = (Math.imul(b, 31) + d) | 0
        }
        // A separator, so that keys "ab" then "c" are not "a" then "bc".
        a = Math.imul(a ^ 0x22, 0x01000193)
        b = (Math.imul(b, 31) + 0x22) | 0
        open[top] = keys
        open[top + 1] = a
        open[top + 2] = b
        sequences.add((a >>> 0) * 0x100000 + (b & 0xfffff))
        if (keys > FAST_KEYS) slowKeys++
        if (sequences.size + slowKeys > MAX_KEY_SEQUENCES) {
          return `the body holds more than ${MAX_KEY_SEQUENCES} distinct sequences of object keys (the gateway's limit)`
        }
        i = next
      } else {
        i = close
      }
    } else if (c === 0x7b) {
      if (open.length < 3 * MAX_SCAN_DEPTH) open.push(0, 0x811c9dc5, 7)
      else deeper++
    } else if (c === 0x7d) {
      if (deeper > 0) deeper--
      else open.length = Math.max(0, open.length - 3)
    }
  }
  return undefined
}

/** The index of the `"` that ends the string whose text starts at `from`, or -1. */
export function closingQuote(text: string, from: number): number {
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
