import type { Deadline } from '@hourglass/core'
import type { HourglassFetch } from '@hourglass/fetch'
import type { Dialect } from '../dialects/Dialect.js'
import type { ProviderError } from '../errors/ProviderError.js'
import type { ChatRequest, ChatResponse, Logprobs, StreamEvent, Usage } from '../types.js'

/** What one attempt needs besides the request. */
export interface SendOptions {
  /** The API key to send with (from admission or the adapter's rotation). */
  apiKey: string | undefined
  /** Sent as `Idempotency-Key`: derived from the operation, the same on every attempt and fallback. */
  idempotencyKey: string
  deadline: Deadline | undefined
  /** Ends the attempt (caller abort, first-token timeout, consumer stopped reading). */
  signal: AbortSignal
  /**
   * What this adapter's `prepare` built for this request (same `stream`):
   * sent as it is instead of building the request again. Anything else is ignored.
   */
  prepared?: PreparedRequest | undefined
  /**
   * Written by the adapter, read by `callModel` once the attempt is over:
   * set to true when a 2xx reply's headers came and its body — a whole
   * answer, sent after the whole generation — is read next (a non-streamed
   * answer, or JSON answering a stream request). The provider generated,
   * and bills, that answer however the read ends, so an attempt the
   * deadline or the caller's signal ends from then on is charged to the
   * `CostBudget` (the prompt estimate plus `maxTokens`), as a body cut by
   * anything else is. An adapter of your own that never sets it: such an
   * attempt is not charged.
   */
  answerStarted?: boolean | undefined
  /**
   * Written by the adapter with `answerStarted`: that reply's 2xx status, for
   * the record of an attempt the deadline or the caller's signal ends while
   * its body is read (it had an HTTP answer). Unset with `answerStarted`
   * set: taken as 200. Also written alone (nothing charged) for a next hop's
   * 504 with `x-deadline-expired: 1`, which ends the attempt as the
   * deadline's expiry.
   */
  answerStatus?: number | undefined
  /**
   * Written by the adapter, read by `callModel` when the attempt ended by
   * the deadline or the caller's signal: `false` when the request was never
   * handed on — the HTTP client was to refuse it at once (the deadline over,
   * or under @hourglass/fetch's `minBudgetMs` left, or the signal already
   * aborted). The attempt's record then says `sent: false`. An adapter of
   * your own that never sets it: such an attempt counts as sent.
   */
  sent?: false | undefined
}

/**
 * The signal of an attempt nothing can end but its deadline (a whole answer,
 * no caller's signal), given only to adapters that take it as "no signal"
 * (`takesNeverAborted`): one for the process instead of a controller and a
 * signal per attempt, which undici would listen to for nothing (~5 µs an
 * attempt). Never aborted. @internal
 */
export const NEVER_ABORTED: AbortSignal = new AbortController().signal

/** The `send` functions of `createAdapter`'s adapters: they hand undici no signal for `NEVER_ABORTED`, and add no listener to it. */
const neverAbortedTakers = new WeakSet<object>()

/** Marks `send` as one that takes `NEVER_ABORTED` as no signal at all. @internal */
export function takesNeverAborted(send: ModelAdapter['send']): void {
  neverAbortedTakers.add(send)
}

/**
 * Whether `adapter.send` is such a function. By the function, not the
 * adapter: a copy of an adapter with a `send` of its own (which might add a
 * listener to the signal and leave it there) gets a signal per attempt.
 * @internal
 */
export function sendTakesNeverAborted(adapter: ModelAdapter): boolean {
  return neverAbortedTakers.has(adapter.send)
}

/** A request built for one adapter, key not yet chosen (`ModelAdapter.prepare`). Opaque. */
export interface PreparedRequest {
  readonly stream: boolean
}

/** One attempt's result, before any policy: an answer, or a classified failure. */
export type SendResult =
  | { ok: true; status: number; response: ChatResponse }
  | { ok: false; error: ProviderError }

/** A stream whose HTTP status was 200: its events, still to be read. */
export type OpenResult =
  | {
      ok: true
      status: number
      events: AsyncIterable<StreamEvent>
      /** The provider's request id header (`Dialect.requestIdHeader`), when it sent one. */
      providerRequestId?: string | undefined
      /**
       * The counts the provider has sent so far, before its `finish`
       * (`StreamParser.usageSoFar`), read when the stream breaks: a cut
       * stream is charged by them rather than by the prompt estimate.
       */
      usageSoFar?: (() => Usage | undefined) | undefined
      /**
       * The provider's id of the answer, once the stream named it
       * (`StreamParser.responseId`), read when the stream breaks: the
       * failed attempt's record names the answer it was (`responseId`).
       */
      responseIdSoFar?: (() => string | undefined) | undefined
      /**
       * The service tier the stream said serves it, once it said
       * (`StreamParser.serviceTier`), read when the stream breaks: a cut
       * stream is charged at it rather than at the tier the call was held at.
       */
      serviceTierSoFar?: (() => string | undefined) | undefined
      /**
       * The tokens' log probabilities so far (`StreamParser.logprobsSoFar`),
       * read when the stream breaks: a stream an output filter stopped keeps
       * those of the text that came (`StreamInterruptedError.partialLogprobs`).
       */
      logprobsSoFar?: (() => Logprobs | undefined) | undefined
    }
  | { ok: false; error: ProviderError }

/**
 * One model at one provider: how to send a normalised request to it. Made by
 * `openAICompatible`, `anthropic` or `gemini`; `callModel` adds the policy.
 */
export interface ModelAdapter {
  /** Provider name for retry budgets, admission cooldowns and logs (`openai`, `anthropic`, your own). */
  readonly name: string
  /** The model id sent upstream and priced by `CostBudget`. */
  readonly model: string
  /**
   * Where requests go (the adapter's `baseURL`). Admission keeps cooldowns
   * per provider name *and* base URL, so two providers of one name at two
   * URLs never share one. Absent: per name only.
   */
  readonly baseURL?: string | undefined
  readonly dialect: Dialect
  /** API keys in order of preference (empty when the provider needs none). */
  readonly apiKeys: readonly string[]
  /**
   * Builds the request for this model without sending it, throwing what
   * `send`/`open` would throw for a request it cannot translate
   * (`InvalidChatRequestError`, or the builder's own error). `callModel`
   * calls it before admission — a request that cannot be built takes no
   * RPM/TPM share and no cooldown probe — and passes the result to every
   * attempt on this model (`SendOptions.prepared`). Optional: an adapter
   * without it is admitted first and refuses the request when it sends.
   */
  prepare?(request: ChatRequest, stream: boolean): PreparedRequest
  /** The next key when no admission chooses one: round-robin, so load spreads over keys. */
  nextKey(): string | undefined
  /**
   * A non-streaming attempt. Every provider failure is a `SendResult`; it
   * rejects only for the deadline, an abort, a bug, or a request it cannot
   * translate — `InvalidChatRequestError`, or what the request builder threw
   * — in which case nothing was sent.
   */
  send(request: ChatRequest, options: SendOptions): Promise<SendResult>
  /**
   * Opens a streaming attempt; failures before the 200 are a `SendResult`-like
   * failure, and it rejects as `send` does. Errors while reading `events` are
   * thrown from the iterator, which ends at the provider's end marker.
   */
  open(request: ChatRequest, options: SendOptions): Promise<OpenResult>
  /**
   * Closes the connections of a fetch the adapter created itself, once its
   * requests in flight are done. Attempts on it after that fail at once
   * with nothing sent (`sent: false`), not retried: the next model is tried.
   */
  close(): Promise<void>
}

/** Options shared by every adapter factory. */
export interface AdapterOptions {
  /** The provider's API base URL (`https://api.openai.com/v1`, `https://api.anthropic.com`). */
  baseURL: string
  /** One key. Use `apiKeys` to rotate several. */
  apiKey?: string | undefined
  /** Several keys of one provider: rotated round-robin, or chosen by admission (cooling keys skipped). */
  apiKeys?: readonly string[] | undefined
  model: string
  /** Provider name for budgets, cooldowns and logs. Default: the dialect's name. */
  name?: string | undefined
  /**
   * Extra headers on every request (never logged). Names are case-insensitive:
   * the key's header, `content-type`, `accept`, `accept-encoding` and
   * `idempotency-key` are the adapter's and replace one given here in any case.
   */
  headers?: Record<string, string> | undefined
  /**
   * The @hourglass/fetch whose `dispatcher` requests go through (sent with
   * `undici.request`: the function itself is not called, so wrap the
   * dispatcher, not the function). Default: a `createFetch` of its own with
   * `headersTimeoutMs: 600000` (a non-streamed answer arrives all at once,
   * after the whole generation) and `bodyTimeoutMs: 120000`, closed by `close()`.
   */
  fetch?: HourglassFetch | undefined
  /**
   * The longest answer body read, in bytes: a non-streamed answer, or a JSON
   * answer to a stream request (a stream has `maxStreamBytes`). Default
   * 32 MiB (33554432) — generous for an LLM answer, so that no real one is
   * refused: 128k output tokens of text or tool-call JSON come to about
   * 0.5–2 MB, escaped multi-byte text a few times that. It bounds what a
   * broken or hostile upstream costs (a 300 MB body was read whole: +369 MB
   * RSS). A longer 2xx body is not read on and its connection is closed;
   * the attempt fails with a `ProviderError` (`kind: 'server_error'`,
   * `status` the 2xx, not retryable) whose `cause` is a
   * `ResponseTooLargeError`: the provider generated and billed that answer,
   * so this model is never asked for it again; a fallback model may be. An
   * error body is read up to the smaller of this and 4 MiB, and classified
   * by its status and headers past that.
   */
  maxResponseBytes?: number | undefined
  /**
   * The most a streamed answer is read in all, in bytes: every byte after
   * its 200, comments included (each event is also bounded by the SSE
   * decoder, 8 MiB). Default 128 MiB (134217728). Streamed, each token
   * comes in an event of its own, about 120–280 bytes of SSE and JSON
   * (Anthropic's `content_block_delta` the smallest, OpenAI's chunk the
   * largest), so 128k output tokens come to up to ~35 MB — past
   * `maxResponseBytes`' 32 MiB, hence a limit of its own, 4× the longest
   * output models offer today. It bounds a provider or proxy that streams
   * for ever (one that never ended was read for ever). Past it the
   * connection is closed and the attempt fails as a whole answer past
   * `maxResponseBytes` does (before the first token: not resent to this
   * model, a fallback may answer; after it: `StreamInterruptedError`, as
   * any stream broken then).
   */
  maxStreamBytes?: number | undefined
}
