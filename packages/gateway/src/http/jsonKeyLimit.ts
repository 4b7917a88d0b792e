import { keyOf, MAX_BODY_DEPTH, tooDeepField } from './jsonDepthLimit.js'
import { closingQuote } from './jsonString.js'

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

/** Why a body is refused before its parse: its keys (413), or its depth (400, naming the top-level field). */
export type BodyShapeProblem = { kind: 'keys'; message: string } | { kind: 'depth'; field: string }

/**
 * Why `text` (a JSON body, before it is parsed) is refused: for its keys
 * (`keyLimitProblem`), else for its depth (`tooDeepField`: the same answer,
 * also for text that is not JSON). A body too short to hold too many keys
 * gets the depth scan alone; a longer one gets one pass counting both,
 * where two passes read it twice (about 8 ms more for 4 MiB of short
 * messages). A key problem anywhere wins, as when the keys were counted
 * first: after the depth limit is passed the pass goes on for keys.
 */
export function bodyShapeProblem(text: string): BodyShapeProblem | undefined {
  if (text.length <= KEY_SCAN_MIN_CHARS) {
    const field = tooDeepField(text)
    return field === undefined ? undefined : { kind: 'depth', field }
  }
  return keysAndDepth(text)
}

/**
 * Why `text` (a JSON body, before it is parsed) is refused for its keys, or
 * `undefined` (`bodyShapeProblem` without the depth).
 */
export function keyLimitProblem(text: string): string | undefined {
  if (text.length <= KEY_SCAN_MIN_CHARS) return undefined
  const problem = keysAndDepth(text)
  return problem?.kind === 'keys' ? problem.message : undefined
}

// Each key takes at least 5 characters (`"":0,`): a shorter body is within both limits.
const KEY_SCAN_MIN_CHARS = 5 * Math.min(MAX_KEYS_PER_OBJECT, MAX_KEY_SEQUENCES)

/**
 * One pass with no allocation but a few numbers per open
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
 * `"\u0061"` and `"a"` count as two. The depth and its top-level field are
 * counted as `tooDeepField` counts them (brackets of both kinds).
 */
function keysAndDepth(text: string): BodyShapeProblem | undefined {
  // Per open object, three numbers: its keys so far and the two hashes of their run.
  const open: number[] = []
  const sequences = new Set<number>()
  let slowKeys = 0 // keys past FAST_KEYS in their object
  let deeper = 0 // objects open past MAX_SCAN_DEPTH
  // tooDeepField's state: the depth, the last string at depth 1 (a top-level
  // key once `:` follows), the field the scan is in, and the first field too deep.
  let depth = 0
  let keyStart = -1
  let keyEnd = -1
  let field: string | undefined
  let tooDeep: string | undefined
  const end = text.length
  for (let i = 0; i < end; i++) {
    const c = text.charCodeAt(i)
    if (c === 0x22) {
      const close = closingQuote(text, i + 1)
      // Unterminated: JSON.parse refuses it (a depth passed before it stands).
      if (close === -1) return depthProblem(tooDeep)
      let next = close + 1
      while (next < end && isWhiteSpace(text.charCodeAt(next))) next++
      if (text.charCodeAt(next) === 0x3a && open.length > 0) {
        const top = open.length - 3
        const keys = (open[top] as number) + 1
        if (keys > MAX_KEYS_PER_OBJECT) {
          return {
            kind: 'keys',
            message: `an object in the body has more than ${MAX_KEYS_PER_OBJECT} keys (the gateway's limit)`,
          }
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
          return {
            kind: 'keys',
            message: `the body holds more than ${MAX_KEY_SEQUENCES} distinct sequences of object keys (the gateway's limit)`,
          }
        }
        // The `:` is skipped: a top-level key names the field from here.
        if (depth === 1) {
          if (tooDeep === undefined) field = keyOf(text.slice(i, close + 1))
          keyStart = -1
        }
        i = next
      } else {
        if (depth === 1) {
          keyStart = i
          keyEnd = close + 1
        }
        i = close
      }
    } else if (c === 0x7b) {
      if (open.length < 3 * MAX_SCAN_DEPTH) open.push(0, 0x811c9dc5, 7)
      else deeper++
      if (++depth > MAX_BODY_DEPTH) tooDeep ??= field ?? 'body'
    } else if (c === 0x7d) {
      if (deeper > 0) deeper--
      else open.length = Math.max(0, open.length - 3)
      if (--depth <= 0) field = undefined
    } else if (c === 0x5b) {
      if (++depth > MAX_BODY_DEPTH) tooDeep ??= field ?? 'body'
    } else if (c === 0x5d) {
      if (--depth <= 0) field = undefined
    } else if (c === 0x3a && depth === 1 && keyStart !== -1) {
      if (tooDeep === undefined) field = keyOf(text.slice(keyStart, keyEnd))
      keyStart = -1
    } else if (c === 0x2c && depth === 1) {
      field = undefined
    }
  }
  return depthProblem(tooDeep)
}

function depthProblem(field: string | undefined): BodyShapeProblem | undefined {
  return field === undefined ? undefined : { kind: 'depth', field }
}

function isWhiteSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09
}
