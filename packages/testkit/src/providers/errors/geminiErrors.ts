import { optionError, refuseUnknownOptions } from '@hourglass/core'
import type { ErrorReply } from '../types.js'
import { GEMINI_ANSWER } from './geminiAnswerBody.js'

/** Gemini API (google.rpc.Status) error bodies. */
export const geminiErrors = {
  /**
   * 429 `RESOURCE_EXHAUSTED` with the wait `retryDelay` (e.g. `"34.4s"`), as
   * Google writes it: exact in the message ("Please retry in 34.4s."), cut to
   * whole seconds in `RetryInfo.retryDelay` (`"34s"`; "Please retry in
   * 58.934310785s." beside `"58s"` in googleapis/python-genai#2114).
   * `limit: 0` is the permanent variant: the model has no quota at all on
   * this tier, and waiting will not help.
   */
  resourceExhausted(
    options: { retryDelay?: string; limit?: number; model?: string } = {},
  ): ErrorReply {
    // Ignored, a misspelled option scripted the default instead.
    refuseUnknownOptions(
      options,
      ['retryDelay', 'limit', 'model'],
      'geminiErrors.resourceExhausted()',
    )
    const limit = options.limit ?? 15
    const model = options.model ?? 'gemini-2.0-flash'
    const metric = 'generativelanguage.googleapis.com/generate_content_free_tier_requests'
    const retryDelay = options.retryDelay ?? '34s'
    // Gemini's RetryInfo duration: seconds with a fraction, then `s`. As it
    // came, 'NaNs' scripted "Please retry in NaNs." and a number (34) a
    // RetryInfo no client reads.
    if (typeof retryDelay !== 'string' || !/^\d{1,10}(\.\d{1,9})?s$/.test(retryDelay)) {
      throw optionError(
        'geminiErrors.resourceExhausted(): retryDelay',
        "a duration as Gemini writes it ('34s', '0.05s')",
        retryDelay,
      )
    }
    return {
      kind: 'error',
      status: 429,
      body: {
        error: {
          code: 429,
          message: `You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.\n* Quota exceeded for metric: ${metric}, limit: ${limit}, model: ${model}\nPlease retry in ${retryDelay}.`,
          status: 'RESOURCE_EXHAUSTED',
          details: [
            {
              '@type': 'type.googleapis.com/google.rpc.QuotaFailure',
              violations: [
                {
                  quotaMetric: metric,
                  quotaId: 'GenerateRequestsPerMinutePerProjectPerModel-FreeTier',
                  quotaDimensions: { location: 'global', model },
                  quotaValue: String(limit),
                },
              ],
            },
            {
              '@type': 'type.googleapis.com/google.rpc.Help',
              links: [
                {
                  description: 'Learn more about Gemini API quotas',
                  url: 'https://ai.google.dev/gemini-api/docs/rate-limits',
                },
              ],
            },
            {
              '@type': 'type.googleapis.com/google.rpc.RetryInfo',
              retryDelay: wholeSeconds(retryDelay),
            },
          ],
        },
      },
      headers: {},
    }
  },
  /**
   * 429 `RESOURCE_EXHAUSTED` without details: a prepaid billing account's
   * balance is spent, and every key on it stops until someone pays
   * (verbatim in discuss.ai.google.dev/t/170539). Not a rate limit.
   */
  prepaymentDepleted(): ErrorReply {
    return rpcError(
      429,
      'RESOURCE_EXHAUSTED',
      'Your prepayment credits are depleted. Please go to AI Studio at https://ai.studio/projects to manage your project and billing.',
    )
  },
  /**
   * 400 `FAILED_PRECONDITION`: the project, not the request — the free tier
   * is not offered where it calls from and billing is off
   * (ai.google.dev/gemini-api/docs/troubleshooting, error-code table).
   */
  freeTierUnavailable(): ErrorReply {
    return rpcError(
      400,
      'FAILED_PRECONDITION',
      'Gemini API free tier is not available in your country. Please enable billing on your project in Google AI Studio.',
    )
  },
  /** 503 `UNAVAILABLE`: the model is overloaded. */
  unavailable(): ErrorReply {
    return rpcError(503, 'UNAVAILABLE', 'The model is overloaded. Please try again later.')
  },
  /** 400 `INVALID_ARGUMENT`: "The input token count (N) exceeds the maximum number of tokens allowed (M)." */
  contextTooLong(options: { tokens?: number; limit?: number } = {}): ErrorReply {
    // Ignored, a misspelled option scripted the default instead.
    refuseUnknownOptions(options, ['tokens', 'limit'], 'geminiErrors.contextTooLong()')
    const limit = options.limit ?? 1_048_576
    return geminiErrors.invalidArgument(
      `The input token count (${options.tokens ?? limit + 1000}) exceeds the maximum number of tokens allowed (${limit}).`,
    )
  },
  /**
   * 400 `INVALID_ARGUMENT` "Request payload size exceeds the limit: N
   * bytes.": the HTTP body over Gemini's byte limit, refused before the
   * model reads it — a 400, not a 413 as Anthropic's. The same words with
   * other figures in google-gemini/deprecated-generative-ai-android#26
   * (4194304) and MaKTaiL/gemini-srt-translator#63 (314572800); 20 MB by
   * default.
   */
  payloadTooLarge(options: { limitBytes?: number } = {}): ErrorReply {
    // Ignored, a misspelled option scripted the default instead.
    refuseUnknownOptions(options, ['limitBytes'], 'geminiErrors.payloadTooLarge()')
    return geminiErrors.invalidArgument(
      `Request payload size exceeds the limit: ${options.limitBytes ?? 20_971_520} bytes.`,
    )
  },
  /**
   * A bad key: 400 `INVALID_ARGUMENT` (not 401) with an `ErrorInfo` whose
   * reason is `API_KEY_INVALID` — only the detail tells it from a bad request.
   */
  invalidApiKey(): ErrorReply {
    return {
      kind: 'error',
      status: 400,
      body: {
        error: {
          code: 400,
          message: 'API key not valid. Please pass a valid API key.',
          status: 'INVALID_ARGUMENT',
          details: [
            {
              '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
              reason: 'API_KEY_INVALID',
              domain: 'googleapis.com',
              metadata: { service: 'generativelanguage.googleapis.com' },
            },
          ],
        },
      },
      headers: {},
    }
  },
  /**
   * A prompt Gemini blocked (`blockReason`, default `PROHIBITED_CONTENT`;
   * `SAFETY`, `BLOCKLIST`, `OTHER`, …): HTTP 200 and no `candidates` at all,
   * only `promptFeedback` beside the prompt's usage — `{"promptFeedback":
   * {"blockReason":"PROHIBITED_CONTENT"},"usageMetadata":{"promptTokenCount":
   * 13,"totalTokenCount":13}}` (vercel/ai#19758, a gemini `alt=sse` stream of
   * that one event; vercel/ai#4236; BerriAI/litellm#20105, the JSON-array
   * form `[{…}]`). Sent in the form the request asked for: a whole answer, a
   * stream's only event, or the array's only element.
   */
  promptBlocked(options: { blockReason?: string } = {}): ErrorReply {
    // Ignored, a misspelled option scripted the default instead.
    refuseUnknownOptions(options, ['blockReason'], 'geminiErrors.promptBlocked()')
    return geminiAnswer(
      { promptFeedback: { blockReason: options.blockReason ?? 'PROHIBITED_CONTENT' } },
      false,
    )
  },
  /**
   * The model wrote a function call Gemini could not parse (code, most
   * often): HTTP 200, a candidate with `finishReason: "MALFORMED_FUNCTION_CALL"`,
   * an empty `content` (`{}`) and the attempt in `finishMessage` —
   * `{"candidates":[{"content":{},"finishReason":"MALFORMED_FUNCTION_CALL"}],
   * "usageMetadata":{"promptTokenCount":9056,"totalTokenCount":9056,…}}`
   * (vercel/ai#5039, gemini-2.0-flash-lite; the `finish_message` "Malformed
   * function call: print(default_api.…)" in langchain-ai/langchain-google#725).
   * Generated, so billed (`paid`). Sent in the form the request asked for,
   * as `promptBlocked`.
   */
  malformedFunctionCall(options: { finishMessage?: string } = {}): ErrorReply {
    // Ignored, a misspelled option scripted the default instead.
    refuseUnknownOptions(options, ['finishMessage'], 'geminiErrors.malformedFunctionCall()')
    const finishMessage =
      options.finishMessage ??
      "Malformed function call: print(default_api.get_weather(city='Paris'))"
    return geminiAnswer(
      {
        candidates: [
          { content: {}, finishReason: 'MALFORMED_FUNCTION_CALL', finishMessage, index: 0 },
        ],
      },
      true,
    )
  },
  invalidArgument(message = 'Request contains an invalid argument.'): ErrorReply {
    return rpcError(400, 'INVALID_ARGUMENT', message)
  },
}

/**
 * A protobuf `Duration`'s seconds as `RetryInfo` carries them, the fraction
 * cut (`"34.4s"` → `"34s"`, `"0.05s"` → `"0s"`); anything else as it is.
 */
function wholeSeconds(delay: string): string {
  const match = /^(\d+)\.\d+s$/.exec(delay)
  return match === null ? delay : `${match[1]}s`
}

/** A `google.rpc.Status` error body without details, on its HTTP status. */
function rpcError(status: number, code: string, message: string): ErrorReply {
  return {
    kind: 'error',
    status,
    body: { error: { code: status, message, status: code } },
    headers: {},
  }
}

/** A 200 answer with nothing to use in it, sent as Gemini sends answers (`GEMINI_ANSWER`). */
function geminiAnswer(body: object, generated: boolean): ErrorReply {
  return Object.assign<ErrorReply, object>(
    { kind: 'error', status: 200, body, headers: {} },
    { [GEMINI_ANSWER]: { generated } },
  )
}
