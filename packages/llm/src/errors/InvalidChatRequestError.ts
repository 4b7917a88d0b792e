import { HourglassError, hasErrorCode } from '@hourglass/core'

export const INVALID_CHAT_REQUEST = 'INVALID_CHAT_REQUEST'

/**
 * A request that cannot be sent as given: refused by `callModel` before
 * anything leaves (`maxTokens` missing or not a whole number ≥ 1, `messages`
 * not an array), or a field a dialect cannot translate. `field` names the culprit.
 */
export class InvalidChatRequestError extends HourglassError {
  static readonly code = INVALID_CHAT_REQUEST
  /** A path such as `messages[2].role`. */
  readonly field: string

  constructor(field: string, problem: string) {
    super(INVALID_CHAT_REQUEST, `${field}: ${problem}`)
    this.field = field
  }
}

export function isInvalidChatRequest(error: unknown): error is InvalidChatRequestError {
  return hasErrorCode(error, INVALID_CHAT_REQUEST)
}
