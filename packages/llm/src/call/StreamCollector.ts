import { textWeight } from '../budget/textWeight.js'
import { argumentsText, parseArguments, refusalOf, textOf } from '../dialects/blocks.js'
import { isEmptyArguments } from '../dialects/emptyToolArguments.js'
import { rewritesAnInteger } from '../dialects/roundedByParsing.js'
import { isMarkedUnfinished, keepUnfinished, markUnfinished } from '../dialects/unfinishedCall.js'
import type {
  Annotation,
  ChatResponse,
  ContentBlock,
  FinishReason,
  Logprobs,
  StreamEvent,
  Usage,
} from '../types.js'

/**
 * Whether an adapter's streamed tool calls keep their argument text as
 * `rawArguments`: on OpenAI's wire, where a whole answer keeps it too
 * (`parseOpenAIResponse`). Anthropic's and Gemini's whole answers carry the
 * arguments as an object and keep the text only where parsing and writing
 * again would change an integer in it (`parseAnthropicResponse`,
 * `roundedArgs`), so theirs streamed
 * do the same: the same answer streamed or not replays the same way.
 */
export function keepsRawArguments(adapter: {
  readonly dialect?: { readonly wire?: string }
}): boolean {
  return adapter.dialect?.wire === 'openai'
}

/**
 * Arguments with at most this many `[` and `{` nest at most this deep, which
 * JSON.stringify writes (V8 on Node 20 stops past ~4,000 levels): not
 * written once more to find out. Counting costs a fraction of writing
 * (64 KB of arguments: writing them again took longer than parsing them).
 */
const SHALLOW_OPENERS = 1024

/** Whether `raw` has more than SHALLOW_OPENERS `[` or `{`: only then can it nest too deep to write. */
function mayNestDeep(raw: string): boolean {
  if (raw.length <= SHALLOW_OPENERS) return false
  let openers = 0
  for (let i = 0; i < raw.length; i++) {
    const c = raw.charCodeAt(i)
    if ((c === 0x5b || c === 0x7b) && ++openers > SHALLOW_OPENERS) return true
  }
  return false
}

/** Builds the whole answer from stream events, so a streamed call ends with a `ChatResponse` too. */
export class StreamCollector {
  readonly #blocks: ContentBlock[] = []
  // By the call's `index` when the event has one (two calls may share an id), else by id.
  readonly #toolArgs = new Map<
    string | number,
    { block: ContentBlock & { type: 'tool_call' }; raw: string }
  >()
  #finishReason: FinishReason = 'unknown'
  #providerFinishReason: string | undefined
  #usage: Usage = { inputTokens: 0, outputTokens: 0 }
  #usageReported = false
  // A `finish` event came (a stop reason, or the end of an answer that had content).
  #finished = false
  // The `textWeight` of the output received: text, thinking, tool names and argument text.
  #outputWeight = 0
  #id = ''
  // The model the provider says answered, when its stream said (`finish.model`).
  #model: string | undefined
  #systemFingerprint: string | undefined
  #serviceTier: string | undefined
  #annotations: Annotation[] | undefined
  #logprobs: Logprobs | undefined
  #sawToken = false
  // The name of a tool call whose arguments parsed too deep to be written again.
  #unwritable: string | undefined
  readonly #keepRaw: boolean

  /**
   * `keepRawArguments`: set each tool call's `rawArguments` to its argument
   * text as received (`keepsRawArguments`), so an integer past 2^53 is
   * replayed as sent, not rounded by parsing, as a whole answer's is.
   * Without it, only text whose integers parsing and writing again would
   * change is kept (`rewritesAnInteger`).
   */
  constructor(keepRawArguments = false) {
    this.#keepRaw = keepRawArguments
  }

  /** The service tier the `finish` said served the answer, once it came. */
  get serviceTier(): string | undefined {
    return this.#serviceTier
  }

  /** True once text, thinking or a tool call arrived: past this point a stream is never restarted. */
  get sawToken(): boolean {
    return this.#sawToken
  }

  add(event: StreamEvent): void {
    const last = this.#blocks.at(-1)
    switch (event.type) {
      case 'text':
        this.#sawToken = true
        this.#outputWeight += textWeight(event.text)
        // A refusal's pieces join each other, never the answer's text: the
        // block's `refusal` mark is what keeps it out of parsed content.
        if (last?.type === 'text' && (last.refusal === true) === (event.refusal === true))
          last.text += event.text
        else if (event.refusal === true)
          this.#blocks.push({ type: 'text', text: event.text, refusal: true })
        else this.#blocks.push({ type: 'text', text: event.text })
        return
      case 'thinking':
        this.#sawToken = true
        this.#outputWeight += textWeight(event.thinking)
        // The field it was said under (`ThinkingBlock.field`) is kept on
        // the block: dropped, `replayThinking` sent vLLM's streamed
        // thinking back under the name vLLM does not read.
        if (last?.type === 'thinking' && last.signature === undefined) {
          last.thinking += event.thinking
          if (event.field !== undefined) last.field = event.field
        } else if (event.field !== undefined)
          this.#blocks.push({ type: 'thinking', thinking: event.thinking, field: event.field })
        else this.#blocks.push({ type: 'thinking', thinking: event.thinking })
        return
      case 'signature':
        // The signature of the thinking just streamed (Anthropic's
        // `signature_delta`) completes that block. One with no thinking right
        // before it — Gemini's `thoughtSignature` on an answer part (its text,
        // its function call), with thought summaries off or after other parts
        // — starts a signed, empty thinking block where it came, as a whole
        // answer's parser puts it (`geminiParts`): it used to be dropped, or
        // pinned to an earlier thought, and the next turn sent it back on the
        // wrong part or not at all (Gemini 3 refuses a function call without it).
        // A redacted block (Anthropic's encrypted reasoning) is a block of its own.
        // So is a signature after a thought already signed: Gemini signs
        // parts, not deltas (a thought carries its own, the function call
        // after it another), and one appended to the other went back on the
        // call as a signature Gemini never issued. Anthropic sends one
        // `signature_delta`, the last delta of its block.
        if (event.redacted === true) {
          this.#blocks.push({
            type: 'thinking',
            thinking: '',
            signature: event.signature,
            redacted: true,
          })
        } else if (
          last?.type === 'thinking' &&
          last.redacted !== true &&
          last.signature === undefined
        ) {
          last.signature = event.signature
        } else this.#blocks.push({ type: 'thinking', thinking: '', signature: event.signature })
        return
      case 'tool_call': {
        this.#sawToken = true
        const key = event.index ?? event.id
        let entry = this.#toolArgs.get(key)
        if (entry === undefined) {
          const block = {
            type: 'tool_call' as const,
            id: event.id,
            name: event.name,
            arguments: {},
          }
          this.#blocks.push(block)
          this.#outputWeight += textWeight(event.name)
          entry = { block, raw: '' }
          this.#toolArgs.set(key, entry)
        } else if (entry.block.name === '' && event.name !== '') {
          // A name that came after the call's opening delta (OpenAI-compatible servers).
          entry.block.name = event.name
          this.#outputWeight += textWeight(event.name)
        }
        entry.raw += event.argumentsDelta
        this.#outputWeight += textWeight(event.argumentsDelta)
        // The parser's `{}` for a call with no argument text (`markUnfinished`).
        if (isMarkedUnfinished(event)) markUnfinished(entry.block)
        return
      }
      case 'finish':
        // The answer's last tool call was cut (Anthropic's `max_tokens` on a `tool_use`).
        if (isMarkedUnfinished(event) && last?.type === 'tool_call') markUnfinished(last)
        this.#finished = true
        this.#finishReason = event.finishReason
        this.#providerFinishReason = event.providerFinishReason
        if (event.usage !== undefined) {
          // A copy: the event goes to the consumer, who may edit it (a
          // running total kept in the first usage object), and this one is
          // what the answer reports, the attempt costs and the budget spends
          // (one such edit charged $25 to a $1 budget for 3 tokens).
          this.#usage = { ...event.usage }
          this.#usageReported = true
        }
        if (event.id !== undefined) this.#id = event.id
        if (event.model !== undefined) this.#model = event.model
        if (event.systemFingerprint !== undefined) this.#systemFingerprint = event.systemFingerprint
        if (event.serviceTier !== undefined) this.#serviceTier = event.serviceTier
        if (event.annotations !== undefined) this.#annotations = event.annotations
        if (event.logprobs !== undefined) this.#logprobs = event.logprobs
        return
    }
  }

  /**
   * True when no answer came: no token and no `finish` — the parsers give
   * none to a stream that ends with no finish reason and no content (an
   * empty body, `data: [DONE]` alone or after a role-only chunk,
   * Anthropic's `message_start` then `message_stop`). A finish reason with
   * no content is an answer: an empty one the provider did finish.
   */
  get empty(): boolean {
    return !this.#sawToken && !this.#finished
  }

  /** The finish reason received so far (`unknown` before the finish). */
  get finishReason(): FinishReason {
    return this.#finishReason
  }

  /** The usage the provider reported (in its `finish` event), if it came. */
  get reportedUsage(): Usage | undefined {
    return this.#usageReported ? this.#usage : undefined
  }

  /**
   * The `textWeight` of the output received so far (text, thinking, tool
   * names and argument text): what a stream cut before its usage is charged
   * by, counted as the prompt estimate counts text.
   */
  get outputWeight(): number {
    return this.#outputWeight
  }

  /**
   * The name of a tool call whose arguments are nested too deep to be
   * written as JSON again (`argumentsText`), once `content()` has parsed
   * them: an answer that cannot be read, as a whole answer with such a call
   * is. Undefined when there is none.
   */
  get unwritableToolCall(): string | undefined {
    return this.#unwritable
  }

  /**
   * Everything received so far (tool arguments parsed). Arguments that parse
   * too deep to be written again (`unwritableToolCall`) stay the text they
   * came as, as arguments that do not parse do: parsed, a raw RangeError
   * came out of whatever wrote them next (the caller's next request, a
   * prompt estimate). Without `keepRawArguments` only: raw text is what
   * gets written then.
   */
  content(): ContentBlock[] {
    return this.#content(false)
  }

  /**
   * What a stream cut short had delivered (`StreamInterruptedError`'s
   * `partialContent`): as `content()`, but a tool call with no argument text
   * yet keeps the text that came, `""`, as one cut inside its arguments
   * keeps its fragment. A call without arguments gets its `{}` from the
   * parser once its end comes (Anthropic's `content_block_stop`, OpenAI's
   * finish): with none, its end never came. Read as `{}`, a call cut right
   * after its opening looked like a finished call without arguments — one
   * a caller continuing from the partial answer would run.
   */
  partialContent(): ContentBlock[] {
    return this.#content(true)
  }

  #content(cut: boolean): ContentBlock[] {
    for (const { block, raw } of this.#toolArgs.values()) {
      block.arguments = cut && isEmptyArguments(raw) ? raw : parseArguments(raw)
      if (this.#keepRaw) block.rawArguments = raw
      else if (mayNestDeep(raw) && argumentsText(block.arguments) === undefined) {
        block.arguments = raw
        this.#unwritable ??= block.name
      } else if (typeof block.arguments !== 'string' && rewritesAnInteger(raw)) {
        // Parsed, written again, an integer would change: the text is kept (a
        // text that is no JSON stays the arguments itself).
        block.rawArguments = raw
      }
    }
    return this.#blocks.map((b) => keepUnfinished(b, { ...b }))
  }

  text(): string {
    return textOf(this.#blocks)
  }

  /**
   * The whole answer. `providerRequestId` is the attempt's request id header,
   * as a non-streamed answer carries it (`x-request-id`, `request-id`, …).
   * `model` (the adapter's) stands in only when the stream named none: the
   * answer's model is the one the provider says answered (a dated snapshot,
   * `gpt-4o-2024-08-06`), as a whole answer's is — given the alias asked
   * for, a streamed answer's `model` and its attempt's `responseModel`
   * (OTel's `gen_ai.response.model`) named another model than the same
   * answer not streamed.
   */
  response(provider: string, model: string, providerRequestId?: string | undefined): ChatResponse {
    const content = this.content()
    const response: ChatResponse = {
      id: this.#id,
      model: this.#model ?? model,
      provider,
      content,
      text: textOf(content),
      finishReason: this.#finishReason,
      usage: this.#usage,
    }
    // No usage came: `usage`'s zeros are "not said" (`ChatResponse.usageReported`).
    if (!this.#usageReported) response.usageReported = false
    const refusal = refusalOf(content)
    if (refusal !== undefined) response.refusal = refusal
    if (providerRequestId !== undefined) response.providerRequestId = providerRequestId
    if (this.#providerFinishReason !== undefined)
      response.providerFinishReason = this.#providerFinishReason
    if (this.#systemFingerprint !== undefined) response.systemFingerprint = this.#systemFingerprint
    if (this.#serviceTier !== undefined) response.serviceTier = this.#serviceTier
    if (this.#annotations !== undefined) response.annotations = this.#annotations
    if (this.#logprobs !== undefined) response.logprobs = this.#logprobs
    return response
  }
}
