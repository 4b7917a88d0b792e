import { HourglassError, hasErrorCode } from '@hourglass/core'
import type { ChatMessage } from '../types.js'

/** The agent loop hit `maxTurns`: the hard circuit breaker against a model that never stops calling tools. */
export class MaxTurnsExceededError extends HourglassError {
  static override readonly errorName: string = 'MaxTurnsExceededError'
  static readonly code = 'MAX_TURNS_EXCEEDED'
  readonly maxTurns: number
  /** The history when the breaker tripped: it ends with the last turn's tool calls, not run. */
  readonly messages: ChatMessage[]

  constructor(maxTurns: number, messages: ChatMessage[]) {
    super(
      MaxTurnsExceededError.code,
      `agent stopped after ${maxTurns} turn(s) (maxTurns) with tool calls still pending`,
    )
    this.maxTurns = maxTurns
    this.messages = messages
  }
}

export function isMaxTurnsExceeded(error: unknown): error is MaxTurnsExceededError {
  return hasErrorCode(error, MaxTurnsExceededError.code)
}
