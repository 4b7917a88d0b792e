import { HourglassError, hasErrorCode } from '@hourglass/core'
import type { ContentBlock, Logprobs } from '../types.js'

export interface StreamInterruptedDetails {
  model: string
  provider: string
  /** The text received before the stream broke (all text deltas joined). */
  partialText: string
  /**
   * Every block received before the stream broke, text, thinking and tool
   * calls: a call's arguments parsed once whole, else the text that came
   * (`""` when none had: its end never came).
   */
  partialContent: ContentBlock[]
  /**
   * The log probabilities of what arrived, when the request asked for them
   * (`logprobs: true`) and the provider sent them. Absent: none.
   */
  partialLogprobs?: Logprobs | undefined
  cause?: unknown
}

/**
 * A streamed answer broke after its first token. It is never restarted
 * silently: the tokens already produced were billed, and a resend would
 * produce (and bill) a different answer. The caller gets what arrived and
 * decides — show it, continue it, or start over knowingly.
 */
export class StreamInterruptedError extends HourglassError {
  static override readonly errorName: string = 'StreamInterruptedError'
  static readonly code = 'STREAM_INTERRUPTED'
  readonly model: string
  readonly provider: string
  readonly partialText: string
  readonly partialContent: ContentBlock[]
  /** The log probabilities of what arrived, when asked for and sent (else undefined). */
  readonly partialLogprobs: Logprobs | undefined

  constructor(details: StreamInterruptedDetails) {
    super(
      StreamInterruptedError.code,
      `stream from ${details.provider}/${details.model} broke after the first token (${describeReceived(details)}); not restarted`,
      details.cause === undefined ? undefined : { cause: details.cause },
    )
    this.model = details.model
    this.provider = details.provider
    this.partialText = details.partialText
    this.partialContent = details.partialContent
    this.partialLogprobs = details.partialLogprobs
  }
}

/**
 * What arrived, for the message. Reasoning and tool calls count as the first
 * token too: a stream cut during thinking said "0 characters received".
 */
export function describeReceived({
  partialText,
  partialContent,
}: Pick<StreamInterruptedDetails, 'partialText' | 'partialContent'>): string {
  let thinking = 0
  let toolCalls = 0
  for (const block of partialContent) {
    if (block.type === 'thinking') thinking += block.thinking.length
    else if (block.type === 'tool_call') toolCalls++
  }
  if (thinking === 0 && toolCalls === 0) return `${partialText.length} characters received`
  const parts = [`${partialText.length} characters of text`]
  if (thinking > 0) parts.push(`${thinking} of thinking`)
  if (toolCalls > 0) parts.push(`${toolCalls} tool call${toolCalls === 1 ? '' : 's'}`)
  return `${parts.join(', ')} received`
}

export function isStreamInterrupted(error: unknown): error is StreamInterruptedError {
  return hasErrorCode(error, StreamInterruptedError.code)
}
