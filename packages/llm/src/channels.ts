import { type Deadline, defineChannel, defineChannels } from '@hourglass/core'

/** `hourglass:llm:attempt`: one model attempt and what was decided after it. */
export interface LlmAttemptMessage {
  deadline: Deadline | undefined
  /** The attempt's number in the call, across its models (1 for the first). */
  attempt: number
  /**
   * Its number on this model (1 for the model's first): a fallback model's
   * first attempt is 1 here, whatever `attempt` says.
   */
  modelAttempt?: number | undefined
  model: string
  provider: string
  /**
   * The HTTP status the attempt got (a stream, or a whole 2xx answer, the
   * deadline or the caller's signal stopped while it was read included); 0
   * for a failure with no HTTP answer; absent for an attempt stopped before
   * any response headers, or never sent for them.
   */
  status?: number | undefined
  /** Class name of the error, when the attempt failed. */
  errorClass?: string | undefined
  /**
   * The normalised failure kind (`rate_limited`, `overloaded`, … — `ErrorKind`),
   * or, for an attempt stopped on the caller's side, `deadline_exceeded` or
   * `aborted` (`StopKind`). Undefined on success, and for an attempt ended by
   * something else thrown (`errorClass` names it).
   */
  errorKind?: string | undefined
  /**
   * Time from sending the request to the attempt's end, in ms; about 0 for an
   * attempt never sent (`sent: false`).
   */
  latencyMs: number
  /**
   * When the attempt began, on `performance.now()`'s clock — on the channel's
   * message only, read from that clock whatever clock the call's deadline
   * runs on (`latencyMs` is the deadline's). A tracer's span of the attempt
   * starts there: made when the message comes, `now − latencyMs` started as
   * late as the message was (a GC pause while it was built and handed
   * round), after the HTTP attempt it covers — and, under a ManualClock, by
   * that clock's latency, not the real one.
   */
  startedAt?: number | undefined
  /**
   * `false` when the request never left for the provider: the adapter could
   * not build it for this model (`InvalidChatRequestError`, or what its
   * request builder threw), or undici refused its headers (a value with a
   * line break: a `network` failure of status 0), or the adapter was closed
   * (`close()`: its HTTP client refuses every request, a `network` failure
   * of status 0 too), or @hourglass/fetch was
   * to refuse it at once (a `deadline_exceeded` or `aborted` attempt whose
   * deadline was over, or under that fetch's `minBudgetMs` left, or whose
   * signal was aborted, when it was handed on: `fetch.wouldRefuse()`) — no operation took
   * place to time or trace. Absent when the request was sent, whatever came
   * of it (an answer, an error status, a connection refused or cut).
   */
  sent?: false | undefined
  decision: 'success' | 'retry' | 'fallback' | 'fail'
  delayMs?: number | undefined
  promptVersion?: string | undefined
  costUsd: number
  /**
   * Tokens the provider reported for the attempt's answer (a success, or an
   * answer that ended in an error, charged as it came). Left out when it
   * reported none (a stream whose usage chunk never came), never 0 for unknown.
   */
  inputTokens?: number | undefined
  outputTokens?: number | undefined
  /**
   * Of `inputTokens`, those read from and written to the provider's prompt
   * cache (`Usage.cachedInputTokens`, `Usage.cacheCreationInputTokens`), when
   * it reported them.
   */
  cachedInputTokens?: number | undefined
  cacheCreationInputTokens?: number | undefined
  /**
   * Of `outputTokens`, those spent reasoning (`Usage.reasoningTokens`), when
   * the provider reported them.
   */
  reasoningTokens?: number | undefined
  /** When an answer came (a success, or an answer that ended in an error): the model that answered, as the provider named it. */
  responseModel?: string | undefined
  /**
   * When an answer came: why the generation stopped (`stop`, `length`,
   * `tool_calls`, …; `error` on the failed attempt of an answer that ended
   * in an error before the caller got any of it).
   */
  finishReason?: string | undefined
  /**
   * When an answer came: the provider's response id (`ChatResponse.id`), when
   * it named one. A stream that failed after naming it (a cut, a first-token
   * timeout, an error frame — with or without tokens delivered) has it too.
   */
  responseId?: string | undefined
  /**
   * The provider's request id of the answer a failed attempt got
   * (`ProviderError.providerRequestId`: OpenAI's `x-request-id`, Anthropic's
   * `request-id`, DeepSeek's `x-ds-trace-id`), for an error status, an error
   * in a 2xx body, or the 200 stream an error frame or a cut ended (before
   * or after its first token): what the provider's support asks for. Absent
   * when no answer came or it named none, and on a success (its
   * `ChatResponse.providerRequestId` has it).
   */
  providerRequestId?: string | undefined
  /**
   * For a streamed attempt whose first token came (a success, or a stream
   * broken or stopped after it): the time from sending the request to that
   * token, in ms — the first chunk that carried output (text, thinking —
   * Anthropic's `redacted_thinking` too —, a tool call), not the role-only
   * or `message_start` frames before it, nor keep-alive comments: what
   * `firstTokenTimeoutMs` waits for.
   */
  firstTokenMs?: number | undefined
  /** When an answer came: `ChatResponse.systemFingerprint` (OpenAI-compatible dialects), when said. */
  systemFingerprint?: string | undefined
  /** When an answer came: `ChatResponse.serviceTier` (`default`, `flex`, …), when said. */
  serviceTier?: string | undefined
  /** Why this attempt went to this model (first in the list, a retry after a cooldown, a fallback expected to answer sooner). */
  choice?: string | undefined
  /**
   * Set on an attempt made as a retry on its model (`modelAttempt` 2 and
   * on): the `errorKind` of the failure that justified it, as the `retry`
   * decision before it said. A retry is made when its attempt starts: one
   * decided and then given up before (the caller left during its wait) ends
   * in a `retry-skipped` message instead. Not set on the attempt of a
   * return to a model left for one expected to answer sooner (its `choice`:
   * `back to …`): no retry was decided — the failure before it was a
   * `fallback` (`why: 'fallback-sooner'`) — so none is counted, nor skipped.
   */
  retryReason?: string | undefined
  /**
   * Set when the attempt failed and this model was not tried again (decision
   * `fallback` or `fail`): what stood in the way of a retry, as
   * @hourglass/fetch's `retry-skipped` names it. `no-budget`: the wait and
   * another attempt do not fit in the time left, or the deadline ended the
   * attempt; `aborted`: the caller's signal did; `not-retryable`: the failure
   * is permanent (or the provider said not to retry; or the adapter could
   * not build the request, nothing sent); `max-attempts`,
   * `max-overloads` (`max529Retries`), `retry-budget` (the provider's retry
   * budget is drained), `retry-after-too-long` (beyond `maxRetryAfterMs`),
   * `fallback-sooner` (the next model is expected to answer first),
   * `background` (an overload, `priority: 'background'`), `keys-retired`,
   * `after-first-byte` (a stream broken after its first token). Named by
   * `decideRetry` itself (the rule that matched first: its `why`).
   */
  why?: string | undefined
  /**
   * `'caller'` when the attempt ended because the caller stopped it, as
   * @hourglass/fetch's `attempt-end` says it: the consumer of a stream left
   * its `for await` (`break`, the iterator's `return()`) before the `finish`
   * event, or called the stream's `cancel`, or the caller aborted the call's
   * `signal` (mid-stream, or while a whole answer was read, as fetch's signal
   * aborted mid-body; before the answer too, when its `status` is then
   * absent) — whatever reason it gave. The rest of the record stays as it
   * was (`decision: 'fail'`, `errorKind: 'aborted'`, `why: 'aborted'`): tell
   * a caller's choice to stop from a failure by this field. Not for the
   * deadline (its expiry, or a cancelled deadline — a client that left —
   * which end the attempt through the HTTP client), nor the deadline's own
   * signal passed as `signal`, nor a stop whose reason is a
   * `DeadlineExceededError`; undefined for an attempt that succeeded (a
   * break after `finish` is a success: the answer is whole) or failed on its
   * own (a provider's error, a cut, a timeout).
   */
  stoppedBy?: 'caller' | undefined
  /**
   * The host the request went to, from the adapter's `baseURL` (an IPv6
   * address without its brackets). Only on the channel's message (not on
   * `onAttempt`'s record), for an attempt that was sent.
   */
  serverAddress?: string | undefined
  /** Its port: the URL's, else the scheme's default (443, 80). As `serverAddress`. */
  serverPort?: number | undefined
  /** The generation parameters the caller set on the request sent. As `serverAddress`. */
  request?: LlmRequestParams | undefined
  /**
   * The wire format the attempt spoke (`Dialect.name`: `openai`,
   * `anthropic`, `gemini`, …), whatever the adapter is called (`provider`
   * is its name, which a caller may set). As `serverAddress`.
   */
  dialect?: string | undefined
  /**
   * `true` when the request asked for a stream (`ChatRequest.stream`);
   * absent for a whole answer. As `serverAddress`.
   */
  stream?: true | undefined
}

/** What a call asked of the model's generation: each field only when the caller set it. */
export interface LlmRequestParams {
  /** `ChatRequest.maxTokens` (always set). */
  maxTokens: number
  temperature?: number | undefined
  topP?: number | undefined
  /** `ChatRequest.stop`, when not empty: its first 16, each cut to 256 characters. */
  stopSequences?: readonly string[] | undefined
  /** `extra.seed`, an integer. */
  seed?: number | undefined
  /** `extra.frequency_penalty`. */
  frequencyPenalty?: number | undefined
  /** `extra.presence_penalty`. */
  presencePenalty?: number | undefined
  /** `extra.top_k` (providers that take it through the OpenAI-compatible API). */
  topK?: number | undefined
  /**
   * The kind of output `extra.response_format` asked for, in the GenAI
   * conventions' words (`gen_ai.output.type`): `json` for `json_object` or
   * `json_schema`, `text` for `text`; absent when the request names no
   * format (or one of a type llm does not know: the provider's to refuse).
   */
  outputType?: 'json' | 'text' | undefined
}

/**
 * `hourglass:llm:retry-skipped`: a retry decided after a failed attempt (an
 * `attempt` message with decision `retry`) that the call gave up before its
 * attempt started: as @hourglass/fetch's `retry-skipped` for a retry it
 * announced and then abandoned.
 */
export interface LlmRetrySkippedMessage {
  deadline: Deadline | undefined
  /** The attempt that was not made, numbered across the call. */
  attempt: number
  /** Its number on this model. */
  modelAttempt: number
  model: string
  provider: string
  /** The `errorKind` of the failure the retry was for. */
  reason: string
  /**
   * What gave it up: `aborted` (the caller's signal, a stream's cancel, a
   * cancelled deadline), `no-budget` (the deadline ran out), `cost-budget`
   * (the cost budget could not afford another attempt), `rate-limited`
   * (admission did not wait out the provider's cooldown: past the deadline,
   * or past when a later model is expected to answer), `keys-retired` (every
   * key of the provider is retired), `error` (something else thrown).
   */
  why: string
}

/** `hourglass:llm:cooldown`. `keyId` is a short non-reversible id, never the key. */
export interface LlmCooldownMessage {
  provider: string
  /** The key's id; `*` for a provider-wide cooldown (an overload). */
  keyId: string
  /** What the cooldown holds back: one model on the key, the key, or every key of the provider. */
  scope?: 'model' | 'key' | 'provider' | undefined
  /** The model, for a model-scoped cooldown (a rate limit). */
  model?: string | undefined
  state: 'start' | 'extend' | 'end'
  /**
   * When the cooldown ends, in wall-clock epoch ms (Infinity for a key retired
   * until restart). Wall-clock, unlike deadlines, because the same cooldown is
   * shared across hosts through Redis.
   */
  untilMs: number
  /**
   * How long the cooldown has left from this message, ms, on the admission's
   * own clock; left out on `end` and for a key retired until restart. Read
   * this, not `untilMs - Date.now()`: `untilMs` is on the admission's
   * `wallClock`, which a test or a fleet may set apart from the host's.
   */
  durationMs?: number | undefined
  reason: string
  /**
   * True on a `start` or an `extend` this process learned from the shared
   * cooldown store: another instance's attempt met the limit and started or
   * lengthened it (counted there). A fleet that counts cooldowns counts only
   * the starts without it. Rarely, this process's own write read back: one
   * the store took, or answered the read of, over 50 ms late — told apart
   * by time alone, a write is taken for another instance's rather than risk
   * missing one.
   */
  learned?: true | undefined
}

/** `hourglass:llm:admission`. */
export interface LlmAdmissionMessage {
  provider: string
  keyId: string
  action: 'wait' | 'switch-key' | 'fallback' | 'fail' | 'probe'
  /**
   * What held the request: the provider's RPM or TPM window, or its keys
   * cooling down (after a 429 or 529; every `switch-key` and `probe`).
   */
  cause: 'rpm' | 'tpm' | 'cooldown'
  waitMs: number
}

/**
 * The diagnostics channels @hourglass/llm publishes on. Messages are built
 * only while somebody subscribes.
 */
export const llmChannels = defineChannels('llm', {
  /** One model attempt ended, with what was decided after it. */
  attempt: defineChannel<LlmAttemptMessage>('hourglass:llm:attempt'),
  /** A retry decided after a failed attempt was given up before its attempt started. */
  retrySkipped: defineChannel<LlmRetrySkippedMessage>('hourglass:llm:retry-skipped'),
  /** A provider (and key) started, extended or ended a cooldown. */
  cooldown: defineChannel<LlmCooldownMessage>('hourglass:llm:cooldown'),
  /** Admission decided what a call to a cooling provider does. */
  admission: defineChannel<LlmAdmissionMessage>('hourglass:llm:admission'),
})

declare module '@hourglass/core' {
  interface ChannelGroups {
    llm: typeof llmChannels
  }
}
