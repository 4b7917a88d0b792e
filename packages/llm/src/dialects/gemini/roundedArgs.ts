import { nonFiniteIn } from '../../call/nonFiniteIn.js'
import { EACH, type JsonPathStep, rawJsonValues } from '../rawJsonValues.js'
import { rewritesAnInteger } from '../roundedByParsing.js'
import { asArray, asRecord, get, getRecord } from '../safeJson.js'
import { holdsUnsafeInteger } from '../toolArguments.js'

/** Where a `GenerateContentResponse` keeps each function call's arguments: the first candidate's. */
const ARGS: readonly JsonPathStep[] = [
  'candidates',
  0,
  'content',
  'parts',
  EACH,
  'functionCall',
  'args',
]

/**
 * The text of each function call's `args` that parsing and writing again
 * change (`rewritesAnInteger`: an integer past 2^53 rounded, a tweet id
 * `1859312345678901234` read `…200`, or one a double holds exactly written
 * with other digits; or a number beyond JSON's range, `1e999` read as
 * Infinity and written `null`), keyed by the
 * parsed `args` object: what `geminiParts` keeps as the call's
 * `rawArguments`, so the call is handed on as the model wrote it, as an
 * OpenAI-wire call's text is. Gemini sends `args` as an object inside the
 * body, whole or streamed (each `alt=sse` chunk, each element of the JSON
 * array without it), so only the body's text still says what it was. A
 * stream hands a call on as that text, else as its `args` written again:
 * `{"t":1e999}` went on as `{"t":null}`, and `runTurns` ran the tool on
 * `null`, with no Infinity left to refuse.
 *
 * `body` is `text` parsed: one response, or the JSON array of a stream's
 * chunks. The text is walked only when a call holds an integer parsing may
 * have rounded (`holdsUnsafeInteger`) or such a number (`nonFiniteIn`):
 * other answers pay nothing.
 */
export function roundedArgs(text: string | undefined, body: unknown): Map<object, string> {
  const rounded = new Map<object, string>()
  if (text === undefined) return rounded
  const chunks = Array.isArray(body) ? body : [body]
  const mayBeRounded = (args: object | undefined) => args !== undefined && changedByWriting(args)
  if (!chunks.some((chunk) => argsOf(chunk).some(mayBeRounded))) return rounded
  const path: readonly JsonPathStep[] = Array.isArray(body) ? [EACH, ...ARGS] : ARGS
  // Each chunk's calls read once: read per call found, an answer of N calls took N² (8,000 calls: 3 s).
  const argsByChunk = chunks.map(argsOf)
  for (const { indexes, text: written } of rawJsonValues(text, path)) {
    // A chunk's place in the array, then the part's in its first candidate.
    const [chunk, part] = Array.isArray(body) ? indexes : [0, ...indexes]
    const args = argsByChunk[chunk as number]?.[part as number]
    if (args !== undefined && (rewritesAnInteger(written) || nonFiniteIn(args) !== undefined)) {
      rounded.set(args, written)
    }
  }
  return rounded
}

/** Whether `args` may not be written again as the model wrote them: see `roundedArgs`. */
function changedByWriting(args: object): boolean {
  return holdsUnsafeInteger(args) || nonFiniteIn(args) !== undefined
}

/** Each part's `functionCall.args` object, by the part's place (undefined for a part without). */
function argsOf(chunk: unknown): (Record<string, unknown> | undefined)[] {
  const candidate = asRecord(asArray(get(chunk, 'candidates'))[0])
  return asArray(get(getRecord(candidate, 'content'), 'parts')).map((part) =>
    getRecord(getRecord(part, 'functionCall'), 'args'),
  )
}
