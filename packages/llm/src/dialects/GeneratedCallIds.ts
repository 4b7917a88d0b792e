import { randomBytes } from 'node:crypto'

/**
 * Ids for tool calls that came without one (Gemini's function calls; an
 * OpenAI-compatible answer, streamed or whole, that sends none or `""`):
 * `call_<random>_<n>`, `n` counting the calls of one response. The random
 * part is drawn once per response, so ids never repeat across the turns of
 * a history: `call_0` on every turn sent a tool result to the wrong call
 * once turns were replayed together.
 */
export class GeneratedCallIds {
  #prefix: string | undefined
  #next = 0

  /** The next id of this response. */
  next(): string {
    // Drawn only when a response has a call without an id: most have none.
    this.#prefix ??= `call_${randomBytes(6).toString('hex')}_`
    return `${this.#prefix}${this.#next++}`
  }
}
