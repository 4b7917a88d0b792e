import type { SseMessage } from '../sse/SseFrame.js'
import type {
  ChatRequest,
  ChatResponse,
  Logprobs,
  NormalizedError,
  StreamEvent,
  Usage,
} from '../types.js'
import type { ErrorInput, StreamErrorInput } from './ErrorInput.js'
import { type HeaderInput, headerValue } from './errorHeaders.js'

/** What to send: a path relative to the provider's base URL, a JSON body, extra headers. */
export interface BuiltRequest {
  /** Relative to the base URL (`/chat/completions`, `/v1/messages`, `/models/m:generateContent`). */
  path: string
  body: Record<string, unknown>
  /** Non-secret headers the dialect needs (`anthropic-version`). Auth is `authHeaders`. */
  headers?: Record<string, string> | undefined
}

export interface ResponseMeta {
  /** Response headers, for the provider request id. */
  headers?: HeaderInput | undefined
  /**
   * The body's text, when `parseResponse` is handed it parsed: a dialect whose
   * tool arguments travel as JSON inside the body reads what parsing rounded
   * (an integer past 2^53) from it.
   */
  text?: string | undefined
}

/** Turns one stream's SSE events into normalised events. One parser per stream: it keeps state. */
export interface StreamParser {
  /**
   * Parses one SSE event. Throws `ProviderReplyError` for an error frame (an
   * `event: error`, or an error object in a data frame) — so no caller can
   * mistake it for an empty success.
   */
  parseStreamEvent(message: Pick<SseMessage, 'event' | 'data'>): StreamEvent[]
  /** The stream ended: returns a `finish` still held back (waiting for usage), if any. */
  end(): StreamEvent[]
  /** True once the provider's end marker (`[DONE]`, `message_stop`, a finish reason) was seen. */
  readonly done: boolean
  /**
   * True while the answer's stop reason has come but its `finish` is held
   * back (OpenAI's for the usage chunk or `[DONE]`, Anthropic's for
   * `message_stop`): the answer is whole, only bookkeeping is missing. The
   * reader then waits `END_GRACE_MS` at most for the rest, and takes `end()`'s
   * `finish`: a server that stops there and leaves the body open must not
   * hold the answer until the deadline. Absent: false.
   */
  readonly finishing?: boolean
  /**
   * The counts the provider has sent before its `finish` (Anthropic's
   * `message_start` input and cache counts, Gemini's `usageMetadata` on
   * every chunk, an OpenAI usage chunk), when it sent any: what a stream
   * cut before its usage event is charged by, instead of the prompt
   * estimate, and what one that ends with no answer is (else nothing).
   * Absent: none.
   */
  readonly usageSoFar?: Usage | undefined
  /**
   * The provider's id of the answer, once the stream named it (OpenAI's
   * chunk `id`, Anthropic's `message_start.message.id`, Gemini's
   * `responseId`): before the `finish` that carries it, so a stream cut
   * earlier still names, on its attempt's record, the answer the provider
   * was generating and billing. Absent: none.
   */
  readonly responseId?: string | undefined
  /**
   * The service tier the stream said serves the answer (OpenAI's chunk
   * `service_tier`, Anthropic's `message_start` `usage.service_tier`),
   * once it said: a stream cut before its `finish` is charged at it, as its
   * answer would have been. Absent: none said.
   */
  readonly serviceTier?: string | undefined
  /**
   * The tokens' log probabilities gathered so far (a stream's go out on its
   * `finish`): what a stream that breaks before its finish (an output
   * filter's refusal) still hands on with the text that came. Absent: none.
   */
  readonly logprobsSoFar?: Logprobs | undefined
}

export type DialectName =
  | 'openai'
  | 'deepseek'
  | 'qwen'
  | 'ernie'
  | 'doubao'
  | 'gemini'
  | 'anthropic'

export interface Dialect {
  readonly name: DialectName
  /** Which wire format requests and responses use. */
  readonly wire: 'openai' | 'anthropic' | 'gemini'
  buildRequest(request: ChatRequest, model: string): BuiltRequest
  /**
   * For a provider that speaks another's wire (DeepSeek, OpenAI's) but
   * refuses some of what that wire takes: throws `InvalidChatRequestError`
   * naming the field, as `buildRequest` does (it calls this first), without
   * building the request — a cheap check before anything is sent (the
   * gateway asks it of every model of a fallback list).
   */
  refuseFields?(request: ChatRequest): void
  /**
   * The response header that carries the provider's request id
   * (`x-request-id`, Anthropic's `request-id`, DeepSeek's `x-ds-trace-id`), read into
   * `providerRequestId` for whole and streamed answers alike; undefined when
   * the provider sends none. A list is read in order, the first one sent
   * wins (`readRequestId`): one wire serves several hosts — DeepSeek's
   * Anthropic route answers `x-ds-trace-id`, a proxy in front of DeepSeek
   * `x-request-id`.
   */
  readonly requestIdHeader?: string | readonly string[] | undefined
  /** The headers that carry an API key, in this provider's spelling. */
  authHeaders(apiKey: string): Record<string, string>
  /** Parses a successful (non-streaming) body: a string or already-parsed JSON. */
  parseResponse(body: unknown, meta?: ResponseMeta): ChatResponse
  createStreamParser(): StreamParser
  /** `undefined` means success. */
  normalizeError(input: ErrorInput): NormalizedError | undefined
  normalizeStreamError(frame: StreamErrorInput): NormalizedError | undefined
}

/**
 * The provider's request id among `headers`: the first of `names`
 * (`Dialect.requestIdHeader`, one name or a list in order) that was sent.
 */
export function readRequestId(
  headers: HeaderInput | undefined,
  names: string | readonly string[] | undefined,
): string | undefined {
  if (names === undefined) return undefined
  if (typeof names === 'string') return headerValue(headers, names)
  for (const name of names) {
    const value = headerValue(headers, name)
    if (value !== undefined) return value
  }
  return undefined
}
