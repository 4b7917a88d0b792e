import { HourglassError, hasErrorCode } from '@hourglass/core'

export const INVALID_CHAT_REQUEST = 'INVALID_CHAT_REQUEST'

/**
 * `reason` of a refused lone surrogate (half an emoji): a character cut in
 * the field, not a field to remove, so a caller (the gateway) can advise
 * sending the whole character without reading the message.
 */
export const LONE_SURROGATE_REFUSED = 'lone_surrogate'

/**
 * A request that cannot be sent as given: refused by `callModel` before
 * anything leaves (`maxTokens` missing or not a whole number ≥ 1, `messages`
 * not an array), or a field a dialect cannot translate. `field` names the culprit.
 */
export class InvalidChatRequestError extends HourglassError {
  static readonly code = INVALID_CHAT_REQUEST
  /** A path such as `messages[2].role`. */
  readonly field: string
  /** Why, when it is not the field itself: a lone surrogate in its text. */
  declare readonly reason?: typeof LONE_SURROGATE_REFUSED

  /**
   * `options.cause`: what was thrown when the refusal was found by a failure
   * (a value JSON.stringify could not write), kept for its own stack.
   */
  constructor(
    field: string,
    problem: string,
    reason?: typeof LONE_SURROGATE_REFUSED,
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
