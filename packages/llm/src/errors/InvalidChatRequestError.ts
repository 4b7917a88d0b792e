import { HourglassError, hasErrorCode } from '@hourglass/core'

export const INVALID_CHAT_REQUEST = 'INVALID_CHAT_REQUEST'

/**
 * `reason` of a refused lone surrogate (half an emoji): a character cut in
 * the field, not a field to remove, so a caller (the gateway) can advise
 * sending the whole character without reading the message.
 */
export const LONE_SURROGATE_REFUSED = 'lone_surrogate'

/**
 * `reason` of a value this provider refuses where others take it (an
 * end-user id holding an email address, for Anthropic; a tool name starting
 * with a digit, for Gemini): the field is fine, this provider is not, so a
 * caller checking a whole fallback list up front (the gateway) refuses it
 * only for the provider asked first, and leaves the others to refuse it if
 * they are reached.
 */
export const PROVIDER_REFUSES_VALUE = 'provider_value'

/**
 * A request that cannot be sent as given: refused by `callModel` before
 * anything leaves (`maxTokens` missing or not a whole number ≥ 1, `messages`
 * not an array), or a field a dialect cannot translate. `field` names the culprit.
 */
export class InvalidChatRequestError extends HourglassError {
  static override readonly errorName: string = 'InvalidChatRequestError'
  static readonly code = INVALID_CHAT_REQUEST
  /** A path such as `messages[2].role`. */
  readonly field: string
  /** Why, when it is not the field itself: a lone surrogate in its text. */
  declare readonly reason?: typeof LONE_SURROGATE_REFUSED | typeof PROVIDER_REFUSES_VALUE

  /**
   * `options.cause`: what was thrown when the refusal was found by a failure
   * (a value JSON.stringify could not write), kept for its own stack.
   */
  constructor(
    field: string,
    problem: string,
    reason?: typeof LONE_SURROGATE_REFUSED | typeof PROVIDER_REFUSES_VALUE,
    options?: ErrorOptions,
  ) {
    super(INVALID_CHAT_REQUEST, `${field}: ${problem}`, options)
    this.field = field
    // Set only when there is one: every other refusal keeps its shape.
    if (reason !== undefined) this.reason = reason
  }
}

export function isInvalidChatRequest(error: unknown): error is InvalidChatRequestError {
  return hasErrorCode(error, INVALID_CHAT_REQUEST)
}
