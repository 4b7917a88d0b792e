/**
 * The script vocabulary of the fake providers: what one request gets back.
 * Plain data, so a test reads as a list of what the provider will do.
 */

/** Which provider's quirks the fake speaks where wire formats overlap. */
export type ProviderDialect =
  | 'openai'
  | 'anthropic'
  | 'gemini'
  | 'deepseek'
  | 'qwen'
  | 'ernie'
  | 'doubao'

/** How a reply is paced on the wire. Every delay is in ms; unset = 0 (no delay). */
export interface Pacing {
  /** Before the status line. */
  latencyMs?: number | undefined
  /** After the headers, before the first token (streams; added to `latencyMs` for JSON replies). */
  firstTokenDelayMs?: number | undefined
  /** Between tokens (streams; for JSON replies the whole generation happens before the headers). */
  tokenDelayMs?: number | undefined
  /** While waiting for the first token, send an SSE `: keep-alive` comment (Anthropic: a `ping` event) every this many ms. */
  keepAliveEveryMs?: number | undefined
  /** Write the body in pieces of this many bytes — cutting multi-byte UTF-8 characters across writes. */
  splitBytes?: number | undefined
  /** Pause between those pieces, so they leave as separate TCP segments. Default: one event-loop turn. */
  writeGapMs?: number | undefined
}

export interface ScriptedToolCall {
  /** Default: a generated id in the provider's style (`call_…`, `toolu_…`). */
  id?: string | undefined
  name: string
  /** The arguments object; sent as JSON (streamed in pieces). */
  arguments: unknown
  /**
   * The arguments' JSON text exactly as sent, instead of `arguments`: for
   * what a JavaScript value cannot hold (an integer past 2^53). Malformed
   * text is sent as written where arguments travel as text (OpenAI-style
   * `arguments`, Anthropic's streamed `partial_json`); where they are a JSON
   * object in the body (Anthropic unstreamed, Gemini) the fake answers a 500
   * `reply_failed` saying why.
   */
  argumentsJson?: string | undefined
}

/** An error frame sent inside a 200 stream after some tokens (Anthropic `event: error`, DashScope `event:error`). */
export interface ScriptedStreamError {
  afterTokens: number
  /** The provider's error payload: an object is sent as the frame's JSON, a string as it is (one line), as `ErrorReply.body` is. */
  body: unknown
  /** The HTTP status the provider claims inside the frame (DashScope's `:HTTP_STATUS/429`). Default 500. */
  status?: number | undefined
}

/** A generated answer: JSON or SSE, depending on what the request asked for. */
export interface TextReply extends Pacing {
  kind: 'text'
  /** The answer text. Split into tokens on words, punctuation and single non-Latin characters. */
  text?: string | undefined
  /** Exact token pieces instead of `text` (joined, they are the text). */
  tokens?: string[] | undefined
  /** Reasoning text, sent as the dialect's thinking/reasoning block before the answer. */
  thinking?: string | undefined
  /** Signature of the thinking block (Anthropic `signature_delta`, Gemini `thoughtSignature`). */
  signature?: string | undefined
  toolCalls?: ScriptedToolCall[] | undefined
  /**
   * Default `stop`, or `tool_calls` when `toolCalls` are given — or, on a
   * fake with `honourOutputLimits`, `length` / `stop` where the request's
   * token cap / stop sequence cut the answer. Set, the answer is sent as
   * scripted, uncut.
   */
  finishReason?: 'stop' | 'length' | 'tool_calls' | 'content_filter' | undefined
  /**
   * Reported usage. Defaults: input = ceil(request body bytes / 4) (at least
   * the cache counts), output = tokens sent, no cache counts.
   * `cachedInputTokens` (read from the prompt cache) and
   * `cacheCreationInputTokens` (written to it) are parts of `inputTokens`,
   * as in @hourglass/llm's `Usage`; each dialect reports them its own way:
   * Anthropic's `input_tokens` leaves both out (`cache_read_input_tokens`,
   * `cache_creation_input_tokens` beside it), OpenAI's `prompt_tokens`
   * includes `prompt_tokens_details.cached_tokens` (DeepSeek's
   * `prompt_cache_hit_tokens` too), Gemini's `promptTokenCount` includes
   * `cachedContentTokenCount`. Anthropic reports cache writes
   * (`cache_creation_input_tokens`), and the `openai` dialect does when this
   * is above 0 (`prompt_tokens_details.cache_write_tokens`); the others
   * leave `cacheCreationInputTokens` out of their answers.
   */
  usage?:
    | {
        inputTokens?: number | undefined
        outputTokens?: number | undefined
        cachedInputTokens?: number | undefined
        cacheCreationInputTokens?: number | undefined
      }
    | undefined
  /** The model named in the answer. Default: the model the request asked for. */
  model?: string | undefined
  /** Extra response headers. */
  headers?: Record<string, string> | undefined
  /** Destroy the connection after this many tokens were written (0 = right after the headers). */
  cutAfterTokens?: number | undefined
  /** Send the dialect's error frame after some tokens, then end the stream (streams only). */
  streamError?: ScriptedStreamError | undefined
}

/** A refusal: a status, a body, headers — exactly as given (200 for errors hidden in a 200 body). */
export interface ErrorReply {
  kind: 'error'
  status: number
  /** An object is sent as JSON; a string as it is. */
  body: unknown
  headers?: Record<string, string> | undefined
  latencyMs?: number | undefined
}

/** Never answer (until the client gives up or the fake closes). */
export interface HangReply {
  kind: 'hang'
  /**
   * Send a 200 status line and headers, then nothing: a stream's
   * (`text/event-stream`; on the Anthropic route its `message_start` first,
   * as a real stalled stream has sent it), or for a request that does not
   * stream a whole answer's (`application/json`). Default false.
   */
  afterHeaders?: boolean | undefined
  /**
   * With `afterHeaders`, on a streamed request: send `: keep-alive` comments
   * (Anthropic: `ping` events) every this many ms, and never a token. A
   * request that does not stream gets none.
   */
  keepAliveEveryMs?: number | undefined
}

export type ProviderReply = TextReply | ErrorReply | HangReply

/** Where a request landed. */
export type ProviderRoute =
  | 'openai-chat'
  | 'anthropic-messages'
  | 'gemini'
  | 'ernie'
  | 'models'
  | 'unknown'

/** What became of a request: `pending` while it is being answered. */
export type RequestOutcome =
  | 'pending'
  | 'success'
  | 'error'
  | 'stream-error'
  | 'cut'
  | 'hang'
  | 'client-closed'

/** One request as the fake saw it. */
export interface RecordedRequest {
  /** 0-based arrival order. */
  index: number
  /** Arrival time on the fake's clock, in ms. */
  receivedAtMs: number
  method: string
  path: string
  query: Record<string, string>
  /** Lower-case names; repeated headers joined with `, `. */
  headers: Record<string, string>
  /** Parsed JSON body (`undefined` when absent or not JSON). */
  body: unknown
  rawBody: string
  /**
   * The API key the request carried (`Authorization: Bearer`, `x-api-key`,
   * `x-goog-api-key`, `?key=`, `?access_token=`). Here for assertions such as
   * "the second key was used"; the fake never logs it.
   */
  apiKey: string | undefined
  route: ProviderRoute
  model: string | undefined
  stream: boolean
  /** The kind of reply chosen (`text`, `error`, `hang`), or `rate-limit` for a rate-limit window. */
  reply: ProviderReply['kind'] | 'rate-limit' | undefined
  outcome: RequestOutcome
  /**
   * Token frames written (text, thinking and tool-argument pieces), those
   * generated but sent as nothing included: OpenAI's silent reasoning, a
   * Gemini thought not asked for, a stop sequence's tokens, a piece of
   * Anthropic tool input still buffered.
   */
  tokensSent: number
  /**
   * True once the request reached generation: it succeeded, tokens were
   * written before it ended, or the model wrote a call Gemini could not parse
   * (`geminiErrors.malformedFunctionCall()`: billed, though nothing usable came).
   */
  paid: boolean
  /**
   * What a reply script (or the fake itself) threw while answering: before
   * anything was written the client got a 500 `reply_failed` naming it
   * (outcome `error`), after it the connection was cut (outcome `cut`).
   * Undefined otherwise.
   */
  failure?: unknown
}

/** A reply, or a function choosing one per request. */
export type ReplyScript =
  | ProviderReply
  | ((request: RecordedRequest) => ProviderReply | Promise<ProviderReply>)
