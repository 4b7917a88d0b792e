import { createHash } from 'node:crypto'

/**
 * What the Messages API takes as a `tool_use.id` (and so as the
 * `tool_result.tool_use_id` naming it): anything else is its 400
 * "messages.1.content.0.tool_use.id: String should match pattern
 * '^[a-zA-Z0-9_-]+$'", which never goes to a fallback.
 */
const TOOL_USE_ID = /^[a-zA-Z0-9_-]+$/

/** The longest part of an unsendable id kept readable in its replacement. */
const KEPT_CHARS = 64

/**
 * A tool call's id as Anthropic takes it. Histories carry ids made by other
 * providers — Kimi's `functions.get_weather:0`, an Ollama or vLLM server's,
 * a Responses-API `call_…|fc_…` — and an OpenAI client sends them back as they
 * came, so a conversation begun elsewhere (or a fallback to Anthropic) was
 * refused outright. An id that is already sendable goes as it is; another
 * becomes its allowed characters, the others as `_`, and a hash of the whole
 * id: the same id always maps to the same one (a call and its result stay
 * paired), and two ids that differ only in replaced characters (`a:1`,
 * `a.1`) stay apart. Anthropic's answer carries its own ids: nothing maps back.
 */
export function anthropicToolUseId(id: string): string {
  if (TOOL_USE_ID.test(id)) return id
  const hash = createHash('sha256').update(id).digest('base64url').slice(0, 16)
  const kept = id.slice(0, KEPT_CHARS).replace(/[^a-zA-Z0-9_-]/g, '_')
  return kept === '' ? `toolu_${hash}` : `${kept}_${hash}`
}

/**
 * The ids one request sends Anthropic for its tool calls and results.
 * Anthropic also answers 400 "messages.3.content.0: `tool_use` ids must be
 * unique" to a history that repeats one, which OpenAI takes: servers that
 * number the calls of each answer (`call_0` on every turn, as this package's
 * own Gemini ids once were) make such histories. A call whose id was already
 * sent gets `_2`, `_3`, … after it; a result goes to the nearest call before
 * it with its id, the calls of one message answered in their order — the
 * pairing OpenAI reads.
 */
export class AnthropicToolIds {
  readonly #sent = new Set<string>()
  /**
   * Per id as sent first: the next suffix to try. Trying `_2`, `_3`, … from
   * the start on every repeat made a history of n calls named `call_0`
   * cost n²/2 lookups: 14,000 turns (2.5 MB, within the gateway's 4 MiB
   * body limit) held the event loop ~20 s.
   */
  readonly #nextSuffix = new Map<string, number>()
  /** Per id as written: the message that last called it, and what was sent for its calls there not yet answered. */
  readonly #open = new Map<string, { message: number; ids: string[] }>()
  /** Per id as written: what was sent for its latest call. */
  readonly #latest = new Map<string, string>()

  /** The id to send for a call in message `message`. */
  call(id: string, message: number): string {
    const base = anthropicToolUseId(id)
    let sent = base
    if (this.#sent.has(sent)) {
      // Every suffix below the one kept was taken already (by this id's
      // repeats, or skipped as another id's): the same ids as trying from 2.
      let n = this.#nextSuffix.get(base) ?? 2
      while (this.#sent.has(`${base}_${n}`)) n++
      sent = `${base}_${n}`
      this.#nextSuffix.set(base, n + 1)
    }
    this.#sent.add(sent)
    const open = this.#open.get(id)
    if (open?.message === message) open.ids.push(sent)
    else this.#open.set(id, { message, ids: [sent] })
    this.#latest.set(id, sent)
    return sent
  }

  /** The id to send for a result naming `id`. */
  result(id: string): string {
    return this.#open.get(id)?.ids.shift() ?? this.#latest.get(id) ?? anthropicToolUseId(id)
  }
}
