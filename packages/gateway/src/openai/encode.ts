import { randomUUID } from 'node:crypto'
import {
  type ChatResponse,
  type FinishReason,
  markedUnfinished,
  type NormalizedError,
  type StreamEvent,
  type Usage,
} from '@hourglass/llm'
import { MAX_PROVIDER_TEXT_CHARS, providerText } from '../llm.js'

/**
 * Normalised → OpenAI's shapes, for a gateway that answers OpenAI clients
 * whatever provider actually replied. The official `openai` client parses
 * these unchanged; `reasoning_content` is DeepSeek's spelling for thinking,
 * which OpenAI clients ignore and DeepSeek-aware ones show.
 */

type OpenAIFinish = 'stop' | 'length' | 'tool_calls' | 'content_filter'

function stringifyArguments(args: unknown): string {
  return typeof args === 'string' ? args : JSON.stringify(args ?? {})
}

/** `error` and `unknown` have no OpenAI spelling; `stop` is what clients handle. */
export function toOpenAIFinish(reason: FinishReason): OpenAIFinish {
  return reason === 'length' || reason === 'tool_calls' || reason === 'content_filter'
    ? reason
    : 'stop'
}

/**
 * OpenAI's `CompletionUsage`, with `prompt_tokens_details` (`cached_tokens`,
 * `cache_write_tokens`) and `completion_tokens_details` (`reasoning_tokens`,
 * `accepted_prediction_tokens`, `rejected_prediction_tokens`) when the
 * provider reported them (its cache reads, cache writes and thoughts map
 * there): absent, not 0, when it did not, so a client cannot read "nothing
 * cached" into "not said".
 */
function openAIUsage(usage: Usage): Record<string, unknown> {
  const out: Record<string, unknown> = {
    prompt_tokens: usage.inputTokens,
    completion_tokens: usage.outputTokens,
    total_tokens: usage.inputTokens + usage.outputTokens,
  }
  const prompt: Record<string, number> = {}
  if (usage.cachedInputTokens !== undefined) prompt['cached_tokens'] = usage.cachedInputTokens
  // Anthropic's `cache_creation_input_tokens`, billed above the input price
  // (1.25× or 2×): OpenAI's field for them. Left out, a client pricing its
  // answers from `usage` priced every cache write as plain input.
  if (usage.cacheCreationInputTokens !== undefined) {
    prompt['cache_write_tokens'] = usage.cacheCreationInputTokens
  }
  if (Object.keys(prompt).length > 0) out['prompt_tokens_details'] = prompt
  const completion: Record<string, number> = {}
  if (usage.reasoningTokens !== undefined) completion['reasoning_tokens'] = usage.reasoningTokens
  // Predicted Outputs (`prediction`): what a client reads to see the prediction pay off.
  if (usage.acceptedPredictionTokens !== undefined) {
    completion['accepted_prediction_tokens'] = usage.acceptedPredictionTokens
  }
  if (usage.rejectedPredictionTokens !== undefined) {
    completion['rejected_prediction_tokens'] = usage.rejectedPredictionTokens
  }
  if (Object.keys(completion).length > 0) out['completion_tokens_details'] = completion
  return out
}

export interface OpenAIEncodeOptions {
  /** Unix seconds for `created`. Default now. */
  createdS?: number | undefined
  /** The model name to report (e.g. the alias the client asked for). Default the response's. */
  model?: string | undefined
}

/** A whole `chat.completion` object. */
export function toOpenAIResponse(
  response: ChatResponse,
  options: OpenAIEncodeOptions = {},
): Record<string, unknown> {
  const last = response.content.at(-1)
  const toolCalls = response.content.flatMap((b) =>
    b.type === 'tool_call'
      ? [
          {
            id: b.id,
            type: 'function',
            function: {
              name: b.name,
              // The call the answer was cut in (`markedUnfinished`, the
              // answer's last, finish `length`): "", as an OpenAI server
              // answers a call cut before its arguments. Its `{}` is the
              // parser's, Anthropic's `{ to }` only the members finished
              // before the cut: written whole, a client (llm's `runTurns`)
              // ran `send_email` on arguments the model never finished.
              arguments:
                b === last && response.finishReason === 'length' && markedUnfinished(b)
                  ? ''
                  : (b.rawArguments ?? stringifyArguments(b.arguments)),
            },
          },
        ]
      : [],
  )
  const thinking = response.content
    .flatMap((b) => (b.type === 'thinking' ? [b.thinking] : []))
    .join('')
  // A refusal goes in `refusal`, as OpenAI answers it, and not in `content`
  // (`text` holds it too, for llm callers): a client parsing structured
  // output from `content` must not parse the refusal's text.
  let content = ''
  let refusal: string | null = null
  for (const b of response.content) {
    if (b.type !== 'text') continue
    if (b.refusal === true) refusal = (refusal ?? '') + b.text
    else content += b.text
  }
  return {
    // OpenAI's id format, as a stream's (minted there: the provider's id
    // comes with the finish, after the first chunk): the provider's when it
    // already has it (an OpenAI-compatible upstream's), else one of ours. An
    // Anthropic `msg_…` or Gemini's bare `responseId` in an OpenAI answer
    // made one endpoint speak two id formats by the model behind it, and a
    // provider that gave none left `""`, which clients key answers by.
    id:
      typeof response.id === 'string' && response.id.startsWith('chatcmpl-')
        ? response.id
        : `chatcmpl-${randomUUID()}`,
    object: 'chat.completion',
    created: options.createdS ?? Math.floor(Date.now() / 1000),
    model: options.model ?? response.model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: content === '' && (toolCalls.length > 0 || refusal !== null) ? null : content,
          refusal,
          ...(thinking === '' ? {} : { reasoning_content: thinking }),
          ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
          // Citations (search models, `web_search_options`), as the provider sent them.
          ...(response.annotations === undefined ? {} : { annotations: response.annotations }),
        },
        // The tokens' log probabilities when `logprobs: true` asked an OpenAI-compatible provider.
        logprobs: response.logprobs ?? null,
        finish_reason: toOpenAIFinish(response.finishReason),
      },
    ],
    // Left out when the provider reported none (its zeros are no figures):
    // a client would take `prompt_tokens: 0` for its bill, as a stream's
    // usage chunk is left out then too.
    ...(response.usageReported === false ? {} : { usage: openAIUsage(response.usage) }),
    // The provider's, when it said (OpenAI-compatible upstreams): with `seed`,
    // what tells a client whether two answers came from the same backend.
    ...(response.systemFingerprint === undefined
      ? {}
      : { system_fingerprint: response.systemFingerprint }),
    ...(response.serviceTier === undefined
      ? {}
      : { service_tier: openAIServiceTier(response.serviceTier) }),
  }
}

/**
 * The tier that served an answer, in OpenAI's words: Anthropic says
 * `standard` for what OpenAI calls `default` (an OpenAI client's types list
 * `auto`, `default`, `flex`, `scale`, `priority`); the rest as the provider
 * said them (`priority` is both's).
 */
function openAIServiceTier(tier: string): string {
  return tier === 'standard' ? 'default' : tier
}

export interface OpenAIChunkEncoderOptions extends OpenAIEncodeOptions {
  /** The `id` every chunk carries (`chatcmpl-…`). */
  id: string
  model: string
  /**
   * Send a last chunk with `usage` and no choices, as `stream_options.include_usage`
   * asks, and `usage: null` on every other chunk, as OpenAI does then. Default false.
   */
  includeUsage?: boolean | undefined
}

/**
 * Normalised stream events → `chat.completion.chunk` objects. Stateful: the
 * first chunk carries the role, each tool call gets an index and sends its
 * id and name once. A call is known by its `index` when the event has one
 * (two parallel calls may share an id: keyed by id, the second was sent as
 * more arguments of the first, its name lost), else by its id. The finish
 * carries what the stream said once (`system_fingerprint`, `service_tier`,
 * the citations as a `delta.annotations` chunk just before it): from then
 * on every chunk carries the first two, as OpenAI's chunks each do.
 */
export class OpenAIChunkEncoder {
  readonly #options: OpenAIChunkEncoderOptions
  readonly #created: number
  readonly #toolIndex = new Map<string | number, number>()
  /** Calls whose first chunk went out with no name: named on the first event that has one. */
  readonly #unnamed = new Set<string | number>()
  #sentRole = false
  /**
   * The parser's `{}` for a call with no argument text (`markedUnfinished`),
   * held until the next call begins (see `encode`) or the finish: on a
   * `length` finish the answer's last call is
   * one cut right after its name, and its `{}` is not what the model sent
   * (llm's `runTurns` behind this gateway ran `send_email({})`); on any
   * other, it is sent, so a client parsing complete calls' arguments reads
   * JSON. By the call's key; `#lastCall` the key of the answer's last block,
   * when that block is a call.
   */
  readonly #heldEmpty = new Map<string | number, StreamEvent & { type: 'tool_call' }>()
  #lastCall: string | number | undefined
  #fingerprint: string | undefined
  #serviceTier: string | undefined

  constructor(options: OpenAIChunkEncoderOptions) {
    this.#options = options
    this.#created = options.createdS ?? Math.floor(Date.now() / 1000)
  }

  encode(event: StreamEvent): Record<string, unknown>[] {
    switch (event.type) {
      case 'text':
        this.#lastCall = undefined
        // A refusal's piece is `delta.refusal`, as OpenAI streams it.
        return [
          this.#chunk(event.refusal === true ? { refusal: event.text } : { content: event.text }),
        ]
      case 'thinking':
        this.#lastCall = undefined
        return [this.#chunk({ reasoning_content: event.thinking })]
      case 'signature':
        return []
      case 'tool_call': {
        const key = event.index ?? event.id
        if (this.#toolIndex.has(key) && markedUnfinished(event)) {
          this.#heldEmpty.set(key, event)
          return []
        }
        if (this.#toolIndex.has(key)) return this.#toolCall(key, event)
        // A call begins: every call before it is finished, none of them the
        // one a `length` answer was cut in. The SDK's stream helper reads it
        // so too — it takes call 0 as done when call 1's first chunk comes,
        // and JSON.parses a strict tool's arguments then — so a `{}` the
        // parser has already closed a call with (Anthropic's, at its block's
        // end) goes out now, not at the finish. A call with no argument text
        // that the parser has not closed (OpenAI's wire: its `{}` comes with
        // the finish) is not guessed at: an upstream may open every call
        // first and send their arguments after.
        const out: Record<string, unknown>[] = []
        for (const [held, event] of this.#heldEmpty) out.push(...this.#toolCall(held, event))
        this.#heldEmpty.clear()
        this.#lastCall = key
        out.push(...this.#toolCall(key, event))
        return out
      }
      case 'finish': {
        const out: Record<string, unknown>[] = []
        for (const [key, held] of this.#heldEmpty) {
          if (event.finishReason === 'length' && key === this.#lastCall) continue
          out.push(...this.#toolCall(key, held))
        }
        this.#heldEmpty.clear()
        this.#fingerprint = event.systemFingerprint
        this.#serviceTier =
          event.serviceTier === undefined ? undefined : openAIServiceTier(event.serviceTier)
        if (event.annotations !== undefined && event.annotations.length > 0) {
          out.push(this.#chunk({ annotations: event.annotations }))
        }
        // llm hands a stream's log probabilities over joined, with the finish:
        // they go on its chunk, which OpenAI's clients append to the
        // choice's `logprobs` as they do each chunk's.
        out.push(this.#chunk({}, toOpenAIFinish(event.finishReason), event.logprobs ?? null))
        if (this.#options.includeUsage && event.usage !== undefined) {
          out.push(this.#base([], openAIUsage(event.usage)))
        }
        return out
      }
    }
  }

  /** A call's delta as a chunk: its index, id and name with its first. */
  #toolCall(
    key: string | number,
    event: StreamEvent & { type: 'tool_call' },
  ): Record<string, unknown>[] {
    let index = this.#toolIndex.get(key)
    const first = index === undefined
    if (index === undefined) {
      index = this.#toolIndex.size
      this.#toolIndex.set(key, index)
    }
    if (first && event.name === '') this.#unnamed.add(key)
    // The name an OpenAI-compatible server sent after the call's opening
    // delta: sent once it is known (the official clients take a later
    // `function.name`); sent only with the first chunk, the call stayed
    // named "" for the client.
    const naming = !first && event.name !== '' && this.#unnamed.delete(key)
    const call = first
      ? {
          index,
          id: event.id,
          type: 'function',
          function: { name: event.name, arguments: event.argumentsDelta },
        }
      : naming
        ? { index, function: { name: event.name, arguments: event.argumentsDelta } }
        : { index, function: { arguments: event.argumentsDelta } }
    return [this.#chunk({ tool_calls: [call] })]
  }

  // One literal per chunk, not `{ ...base, choices }`: on Node 20 each field
  // after a spread costs ~0.4 µs, and a stream has a chunk per token or so.
  #base(choices: unknown[], usage?: unknown): Record<string, unknown> {
    const chunk: Record<string, unknown> = {
      id: this.#options.id,
      object: 'chat.completion.chunk',
      created: this.#created,
      model: this.#options.model,
      choices,
    }
    if (this.#fingerprint !== undefined) chunk['system_fingerprint'] = this.#fingerprint
    if (this.#serviceTier !== undefined) chunk['service_tier'] = this.#serviceTier
    // Under include_usage OpenAI gives every other chunk `usage: null`
    // (documented): a client may tell the usage chunk by the field's value.
    if (usage !== undefined) chunk['usage'] = usage
    else if (this.#options.includeUsage === true) chunk['usage'] = null
    return chunk
  }

  #chunk(
    delta: Record<string, unknown>,
    finishReason: OpenAIFinish | null = null,
    logprobs: unknown = null,
  ): Record<string, unknown> {
    const withRole = this.#sentRole ? delta : { role: 'assistant', ...delta }
    this.#sentRole = true
    return this.#base([{ index: 0, delta: withRole, logprobs, finish_reason: finishReason }])
  }
}

/** One SSE event carrying a JSON payload, as OpenAI frames it. */
export function openAISseData(payload: unknown): string {
  return `data: ${JSON.stringify(payload)}\n\n`
}

export const OPENAI_SSE_DONE = 'data: [DONE]\n\n'

const ERROR_SHAPES: Record<NormalizedError['kind'], [number, string, string]> = {
  rate_limited: [429, 'rate_limit_exceeded', 'requests'],
  quota_exhausted: [429, 'insufficient_quota', 'insufficient_quota'],
  overloaded: [503, 'overloaded', 'server_error'],
  server_error: [502, 'upstream_error', 'server_error'],
  timeout: [504, 'timeout', 'server_error'],
  network: [502, 'upstream_unreachable', 'server_error'],
  bad_request: [400, 'invalid_request', 'invalid_request_error'],
  // The upstream's key failed, not the client's: the client cannot fix it.
  auth: [502, 'upstream_auth_failed', 'server_error'],
  content_policy: [400, 'content_policy_violation', 'invalid_request_error'],
  context_too_long: [400, 'context_length_exceeded', 'invalid_request_error'],
  // Bigger than the provider's whole per-minute limit: a 429 would invite
  // the same request again; only a smaller one (or a higher tier) helps.
  request_too_large: [413, 'request_too_large', 'invalid_request_error'],
  // The provider does not know the configured model (or path): the
  // operator's config, not the client's request — a 404 `model_not_found`
  // told the client its model was unknown while GET /v1/models listed it,
  // and counted a broken config as client errors (4xx, logged at info).
  not_found: [502, 'upstream_not_found', 'server_error'],
}

/**
 * A normalised error as OpenAI's error body and a suggested status. The
 * message is the normalised one (already cut and scrubbed of keys), on one
 * printable line (`providerText`).
 */
export function toOpenAIError(error: NormalizedError): {
  status: number
  body: { error: { message: string; type: string; param: null; code: string } }
} {
  const [status, code, shapeType] = ERROR_SHAPES[error.kind] ?? [
    502,
    'upstream_error',
    'server_error',
  ]
  // OpenAI's 429 names the limit hit in `type`: `tokens` or `requests` (the
  // default, when the provider did not say).
  const type = error.kind === 'rate_limited' ? (error.limitedBy ?? shapeType) : shapeType
  const message = providerText(error.message, MAX_PROVIDER_TEXT_CHARS)
  return { status, body: { error: { message, type, param: null, code } } }
}
