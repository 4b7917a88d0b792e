/**
 * The normalised model-call vocabulary every dialect adapter translates to and
 * from. Neutral on purpose: neither OpenAI's nor Anthropic's shape, so no
 * provider's quirks leak into policy code.
 */

import type { ErrorKind } from './errors/errorKinds.js'

export type { ErrorKind } from './errors/errorKinds.js'

export interface TextBlock {
  type: 'text'
  text: string
  /**
   * The model's refusal (OpenAI's structured outputs: `message.refusal`,
   * streamed as `delta.refusal`), not an answer: a client that parses the
   * answer as JSON must not parse this. Still text, so `ChatResponse.text`
   * and the next turn's history carry it as before; `ChatResponse.refusal`
   * holds it alone.
   */
  refusal?: boolean | undefined
}

/** A reasoning block. `signature` is provider-issued and only valid for that provider/model. */
export interface ThinkingBlock {
  type: 'thinking'
  thinking: string
  signature?: string | undefined
  /**
   * Reasoning the provider encrypted (Anthropic's `redacted_thinking`):
   * `thinking` is empty and `signature` holds the block's `data`, which goes
   * back as the same `redacted_thinking` block — not as a thinking block
   * signed with it, which Anthropic refuses.
   */
  redacted?: boolean | undefined
  /**
   * The field an OpenAI-compatible server said this thinking under, when it
   * was `reasoning` (vLLM, OpenRouter, Ollama), not DeepSeek's
   * `reasoning_content`. A fact about where it came from, kept through a
   * fallback (unlike `signature`): the adapter that sends it back picks the
   * name. `openAICompatible({ replayThinking: true })` on dialect `'openai'`
   * sends it back as `reasoning`, the only name vLLM reads
   * (vllm-project/vllm#38488); dialects `'deepseek'`, `'qwen'`, `'ernie'`
   * and `'doubao'` send every turn's thinking as `reasoning_content`.
   */
  field?: 'reasoning' | undefined
  /**
   * The model that signed it, as `model@provider`: set by `callModel` on the
   * signed thinking of the answers it returns, and read when such an answer
   * comes back in a later call's history. The signature goes to that model
   * only — the call's primary or a fallback — and is stripped for every
   * other, which would refuse it (Anthropic's "Invalid `signature`",
   * Gemini's "Corrupted thought signature"). A block without it (a history
   * built by hand) keeps its signature for the primary only.
   */
  signedBy?: string | undefined
}

export interface ToolCallBlock {
  type: 'tool_call'
  id: string
  name: string
  /** Parsed JSON arguments (an object), as the model sent them. */
  arguments: unknown
  /**
   * The arguments' text exactly as received, when they came as text (an
   * OpenAI-shaped request): `arguments` must be what it parses to. The
   * OpenAI-compatible dialects send this text unchanged instead of
   * re-serialising `arguments` (which would round integers past 2^53, and
   * turn `"a string"` into `a string`). Anthropic and Gemini take the parsed
   * value, and only a JSON object (empty text counts as `{}`).
   */
  rawArguments?: string | undefined
}

export interface ToolResultBlock {
  type: 'tool_result'
  toolCallId: string
  content: string
  isError?: boolean | undefined
}

export type ContentBlock = TextBlock | ThinkingBlock | ToolCallBlock | ToolResultBlock

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool'
  /** A plain string is shorthand for one text block. */
  content: string | ContentBlock[]
  /**
   * OpenAI's participant name of a system, user or assistant message. Sent
   * by the OpenAI-compatible dialects; Anthropic and Gemini have no
   * equivalent and throw `InvalidChatRequestError` (`messages[i].name`).
   */
  name?: string | undefined
}

export interface ToolDefinition {
  name: string
  description?: string | undefined
  /** JSON Schema of the arguments. */
  parameters: Record<string, unknown>
  /**
   * OpenAI's strict mode: the arguments always match `parameters`. Sent by
   * the OpenAI-compatible dialects; Anthropic (a beta behind its own header)
   * and Gemini have no equivalent, so their translators refuse `true` with
   * an `InvalidChatRequestError` instead of silently dropping it.
   */
  strict?: boolean | undefined
}

export interface ChatRequest {
  messages: ChatMessage[]
  /** Output cap in tokens. Required: it bounds both latency and cost. */
  maxTokens: number
  temperature?: number | undefined
  topP?: number | undefined
  stop?: string[] | undefined
  tools?: ToolDefinition[] | undefined
  stream?: boolean | undefined
  /** Free-form metadata passed to adapters (never sent upstream unless an adapter maps it). */
  metadata?: Record<string, string> | undefined
  /**
   * Chat Completions fields beyond the ones above, in OpenAI's wire names and
   * shapes (`response_format`, `tool_choice`, `seed`, …), as the client sent
   * them. OpenAI-compatible dialects send them unchanged; Anthropic and
   * Gemini translate those they have an equivalent for and throw
   * `InvalidChatRequestError` naming any other, so none is dropped silently.
   */
  extra?: Record<string, unknown> | undefined
}

export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter' | 'error' | 'unknown'

export interface Usage {
  /** Every input token, cached ones included. */
  inputTokens: number
  /** Every output token, reasoning included. */
  outputTokens: number
  /**
   * Of `inputTokens`, those read from the provider's prompt cache (OpenAI's
   * `prompt_tokens_details.cached_tokens`, Anthropic's
   * `cache_read_input_tokens`, Gemini's `cachedContentTokenCount`), when it
   * reported them.
   */
  cachedInputTokens?: number | undefined
  /**
   * Of `inputTokens`, those written to the provider's prompt cache
   * (Anthropic's `cache_creation_input_tokens`, OpenAI's
   * `prompt_tokens_details.cache_write_tokens`: billed above the input
   * price), when it reported them.
   */
  cacheCreationInputTokens?: number | undefined
  /**
   * Of `cacheCreationInputTokens`, those written to 1-hour entries
   * (Anthropic's `cache_creation.ephemeral_1h_input_tokens`: billed at 2×
   * the input price where a 5-minute write is 1.25×), when the provider
   * reported them. Priced at `ModelPrice.cacheCreation1hInputPerMTok`.
   */
  cacheCreation1hInputTokens?: number | undefined
  /**
   * Of `outputTokens`, those spent reasoning (OpenAI's
   * `completion_tokens_details.reasoning_tokens`, Gemini's
   * `thoughtsTokenCount`), when the provider reported them.
   */
  reasoningTokens?: number | undefined
  /**
   * Of `outputTokens`, the Predicted Outputs tokens the answer used and those
   * it did not (billed all the same): OpenAI's
   * `completion_tokens_details.accepted_prediction_tokens` and
   * `rejected_prediction_tokens`, when the provider reported them.
   */
  acceptedPredictionTokens?: number | undefined
  rejectedPredictionTokens?: number | undefined
}

export interface ChatResponse {
  /** The provider's response id. */
  id: string
  /** The model that actually answered (may differ from the one asked for after a fallback). */
  model: string
  /** The provider adapter's name (`openai`, `anthropic`, …). */
  provider: string
  content: ContentBlock[]
  /** All text blocks joined: the convenience most callers want (a refusal's text included). */
  text: string
  /**
   * The refusal's text (the text blocks marked `refusal`, joined), when the
   * model refused (OpenAI's `message.refusal`): check it before parsing
   * `text` as structured output.
   */
  refusal?: string | undefined
  finishReason: FinishReason
  /**
   * The provider's own finish reason, as sent, when `finishReason` is
   * `error` (Gemini's `OTHER`, `MALFORMED_FUNCTION_CALL`; DeepSeek's
   * `insufficient_system_resource`): which of them it was. Also on a
   * `length` finish that is no output-cap stop: Anthropic's (and z.ai's
   * OpenAI-compatible) `model_context_window_exceeded`, Mistral's
   * `model_length` (the context window is full, whatever
   * `maxTokens`), which the output-limit recovery surfaces at once as
   * `OutputTruncatedError` instead of raising the cap or continuing.
   * Absent otherwise (a plain `max_tokens` stop has none).
   */
  providerFinishReason?: string | undefined
  /**
   * The tokens the provider reported. When it reported none (an
   * OpenAI-compatible server or proxy that leaves `usage` out, a stream whose
   * usage chunk never came, an Anthropic or Gemini answer without its
   * counts), `usage` is all zeros and `usageReported` is `false`: zeros that
   * mean "not said", not "none used".
   */
  usage: Usage
  /**
   * `false` when the provider reported no usage for this answer (`usage` is
   * then zeros, not counts); absent when it did. Attempt records and chat
   * spans leave the tokens out for such an answer, and a `CostBudget`
   * charges it by estimate. An adapter of your own may leave it unset.
   */
  usageReported?: false | undefined
  /** The provider's request id header (`x-request-id`, Anthropic's `request-id`, DeepSeek's `x-ds-trace-id` — on its Anthropic route too), for support tickets. */
  providerRequestId?: string | undefined
  /**
   * The backend configuration that answered (OpenAI's `system_fingerprint`),
   * when the provider said: with `seed`, what tells a client whether two
   * answers can be compared. OpenAI-compatible dialects only.
   */
  systemFingerprint?: string | undefined
  /**
   * The tier that served the answer, when said: OpenAI's `service_tier`
   * (`default`, `flex`, `priority`, …), Anthropic's `usage.service_tier`
   * (`standard`, `priority`, `batch`). A `CostBudget` charges the answer at it.
   */
  serviceTier?: string | undefined
  /**
   * The answer's citations (OpenAI's `message.annotations`, `url_citation`
   * from search models and `web_search_options`), as the provider sent them.
   * OpenAI-compatible dialects only; absent when none came.
   */
  annotations?: Annotation[] | undefined
  /**
   * The choice's token log probabilities (OpenAI's `choices[0].logprobs`:
   * `{ content, refusal }`, arrays of `{ token, logprob, bytes, top_logprobs }`),
   * as sent, when `extra.logprobs` asked for them; a stream's pieces joined.
   * OpenAI-compatible dialects, and Gemini (its `logprobsResult` in this
   * shape); not Anthropic, which has none.
   */
  logprobs?: Logprobs | undefined
}

/** OpenAI's `ChoiceLogprobs`: each list's entries as the provider sent them. */
export interface Logprobs {
  content: unknown[] | null
  refusal: unknown[] | null
}

/** One of OpenAI's message annotations (`{ type: 'url_citation', url_citation: { url, title, start_index, end_index } }`), as sent. */
export type Annotation = Record<string, unknown>

/** One piece of a streamed answer, normalised. */
export type StreamEvent =
  | {
      type: 'text'
      text: string
      /** A piece of the model's refusal (`delta.refusal`), not of its answer: `TextBlock.refusal`. */
      refusal?: boolean | undefined
    }
  | {
      type: 'thinking'
      thinking: string
      /** Said as `reasoning` on OpenAI's wire: `ThinkingBlock.field`. */
      field?: 'reasoning' | undefined
    }
  | {
      type: 'signature'
      signature: string
      /** A whole encrypted reasoning block (`ThinkingBlock.redacted`), not the signature of the thinking before it. */
      redacted?: boolean | undefined
    }
  | {
      type: 'tool_call'
      id: string
      name: string
      argumentsDelta: string
      /**
       * The call's position in the answer (0, 1, …), when the dialect knows
       * it (OpenAI's wire; Anthropic's and Gemini's, which number their
       * calls in the order they come). Two parallel calls a server gave the
       * same id (or none after their first delta) are told apart by it, not
       * by `id`.
       */
      index?: number | undefined
    }
  | {
      type: 'finish'
      finishReason: FinishReason
      /**
       * `ChatResponse.providerFinishReason`: when `finishReason` is `error`,
       * and on a `length` finish because the context window is full
       * (`model_context_window_exceeded`, Mistral's `model_length`).
       */
      providerFinishReason?: string | undefined
      usage?: Usage | undefined
      id?: string | undefined
      /**
       * `ChatResponse.model`: the model the provider says answered (OpenAI's
       * chunk `model`, Anthropic's `message_start` `message.model`, Gemini's
       * `modelVersion`), when the stream said.
       */
      model?: string | undefined
      /** `ChatResponse.systemFingerprint`, when the stream said. */
      systemFingerprint?: string | undefined
      /** `ChatResponse.serviceTier`, when the stream said. */
      serviceTier?: string | undefined
      /**
       * `ChatResponse.annotations`: every `delta.annotations` of the stream,
       * in order, gathered here (a client gets them with the finish).
       */
      annotations?: Annotation[] | undefined
      /** `ChatResponse.logprobs`: every chunk's `logprobs`, joined. */
      logprobs?: Logprobs | undefined
    }

/** What a dialect's error normaliser returns for one failed response. */
export interface NormalizedError {
  kind: ErrorKind
  retryable: boolean
  /** HTTP status as received (200 for errors hidden in a 200 body or an SSE error frame). */
  status: number
  /** The provider's own code (`insufficient_quota`, `Throttling.RateQuota`, `336501`, …). */
  providerCode?: string | undefined
  /**
   * The request field the provider names as the problem (OpenAI's `param`:
   * `messages[0].content`, `response_format`), when it names one.
   */
  param?: string | undefined
  /** The provider's message, cut to 500 characters. Never contains request headers or keys. */
  message: string
  /** How long the provider asked us to wait, from headers or body, in ms. */
  retryAfterMs?: number | undefined
  /**
   * What a limit applies to, when the provider says so (Gemini's quota
   * dimensions): `model` (this model on this key), `key` (every model of the
   * key: a project or organisation limit), `provider` (every key). Absent:
   * admission's rule by kind (docs/admission.md, "Cooldown scopes").
   */
  scope?: CooldownScope | undefined
  /**
   * `day` for a spent quota that counts per day (Gemini's `…PerDay…`
   * quotas): `retryAfterMs` is then the day, not the provider's hint, and
   * admission's cooldown says so.
   */
  quotaWindow?: 'day' | undefined
  /**
   * For `request_too_large`, when the provider's message names them: the
   * limit the request alone exceeds (`TPM`, `TPD`), its size and the
   * request's, in tokens — what the error's reason and the gateway's 413
   * tell the caller, without the provider's text (it names the account's
   * organisation).
   */
  overLimit?: OverLimit | undefined
  /**
   * For `rate_limited`, when the provider says which limit it hit: its
   * `requests` per minute (or day), or its `tokens` (input, output or both).
   * Read from the body (OpenAI's `type`, Gemini's `QuotaFailure` quota id),
   * else the remaining-count header at 0 (`x-ratelimit-remaining-tokens`,
   * `anthropic-ratelimit-input-tokens-remaining`, …), else the message
   * ("tokens per min (TPM)"). Absent when it does not say, or names both.
   */
  limitedBy?: RateLimitedBy | undefined
}

/** Which limit a rate limit hit: `NormalizedError.limitedBy`. */
export type RateLimitedBy = 'requests' | 'tokens'

/** A request bigger than a whole limit: `NormalizedError.overLimit`. */
export interface OverLimit {
  /** The limit's name as the provider abbreviates it: `TPM` (tokens per minute), `TPD` (per day). */
  limit: string
  limitTokens: number
  requestedTokens: number
}

/** What one cooldown holds back (see `NormalizedError.scope`). */
export type CooldownScope = 'model' | 'key' | 'provider'
