import { HourglassError, hasErrorCode } from '@hourglass/core'
import type { ErrorKind, NormalizedError, Usage } from '../types.js'
import { codeLine, printableError } from './printableError.js'

export interface ProviderErrorDetails {
  /** The adapter's name (`openai`, `anthropic`, …). */
  provider: string
  model: string
  /**
   * The failure as the provider's dialect classified it; with `usage` when
   * the 2xx answer that carried it had reported counts (`ProviderError.usage`).
   */
  error: NormalizedErrorWithUsage
  cause?: unknown
  /**
   * The provider's request id header of the answer the failure came in
   * (`Dialect.requestIdHeader`): `ProviderError.providerRequestId`.
   */
  requestId?: string | undefined
}

/**
 * A dialect's classification of an error in a 2xx answer, with what the
 * answer had generated before it: Gemini's JSON-array answer
 * (`streamGenerateContent` without `alt=sse`) whose chunks carried
 * `usageMetadata` (`usage`) or output without counts
 * (`outputCharsBeforeError`), then an `{"error": …}` element.
 */
export type NormalizedErrorWithUsage = NormalizedError & {
  usage?: Usage | undefined
  outputCharsBeforeError?: number | undefined
}

/**
 * One failed model attempt, classified: an HTTP error, an error hidden in a
 * 200 body, an SSE error frame, or a transport failure (`network`,
 * `timeout`). What `ModelUnavailableError.causes` and `onAttempt` carry, so a
 * log line never needs to know the provider's dialect.
 */
export class ProviderError extends HourglassError {
  static override readonly errorName: string = 'ProviderError'
  static readonly code = 'PROVIDER_ERROR'
  readonly provider: string
  readonly model: string
  readonly kind: ErrorKind
  readonly retryable: boolean
  /** HTTP status as received; 200 for errors in a 200 body or stream, 0 when no answer came. */
  readonly status: number
  readonly providerCode: string | undefined
  /** The wait the provider asked for, in ms, if it named one. */
  readonly retryAfterMs: number | undefined
  /** The normalised error, as the dialect returned it (without its `usage`). */
  readonly normalized: NormalizedError
  /**
   * The counts the provider reported in the 2xx answer this error came in,
   * before the error (the last `usageMetadata` of Gemini's JSON-array
   * answer): billed by the provider, so what the attempt is charged by and
   * its record says. Undefined for any other error.
   */
  readonly usage: Usage | undefined
  /**
   * The weight of the output (text, thinking, function names and arguments;
   * not a character count: the name is kept for compatibility)
   * the 2xx answer this error came in had carried before it, when it
   * reported no usage (Gemini's JSON-array answer): generated and billed, so
   * the attempt is charged as a stream cut before its usage is. Weighed as
   * the cost budget counts text (an ASCII character 1, any other 4: a whole
   * token, as the prompt estimate counts it), so `ceil(n / 4)` is the output
   * tokens charged. Undefined for any other error.
   */
  readonly outputCharsBeforeError: number | undefined
  /**
   * The provider's request id (`Dialect.requestIdHeader`: OpenAI's
   * `x-request-id`, Anthropic's `request-id`, DeepSeek's `x-ds-trace-id`) of
   * the answer this failure came in — an error status, an error in a 2xx
   * body, an answer that could not be read, the 200 stream an error frame or
   * a cut ended: what the provider's support asks for. Undefined when no
   * answer came (a transport failure before any headers) or it named none.
   * Kept off `normalized`, whose shape is what a gateway's error body says.
   */
  readonly providerRequestId: string | undefined

  constructor(details: ProviderErrorDetails) {
    // Whoever built it (a custom dialect, a finish reason), what reaches
    // logs and clients is printable.
    const e = printableError(details.error)
    const code = e.providerCode === undefined ? '' : `, ${e.providerCode}`
    super(
      ProviderError.code,
      `${details.provider}/${details.model}: ${e.kind} (HTTP ${e.status}${code}): ${e.message}`,
      details.cause === undefined ? undefined : { cause: details.cause },
    )
    this.provider = details.provider
    this.model = details.model
    this.kind = e.kind
    this.retryable = e.retryable
    this.status = e.status
    this.providerCode = e.providerCode
    this.retryAfterMs = e.retryAfterMs
    this.usage = e.usage
    this.outputCharsBeforeError = e.outputCharsBeforeError
    // A header's value, as the provider or a proxy wrote it: on one printable line too.
    this.providerRequestId = codeLine(details.requestId)
    // Kept off `normalized`: what reaches logs and the gateway's error body.
    if (e.usage === undefined && e.outputCharsBeforeError === undefined) this.normalized = e
    else {
      const { usage: _usage, outputCharsBeforeError: _chars, ...rest } = e
      this.normalized = rest
    }
  }
}

export function isProviderError(error: unknown): error is ProviderError {
  return hasErrorCode(error, ProviderError.code)
}
