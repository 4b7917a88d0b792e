import { refuseUnknownOptions } from '@hourglass/core'
import { checkReplyFields } from './checkReplyFields.js'
import { checkUsage } from './checkUsage.js'
import type { ErrorReply, HangReply, TextReply } from './types.js'

/** Builders for the three kinds of scripted reply. */
export const reply = {
  /** A generated answer (JSON or SSE, as the request asked). */
  text(text: string, options: Omit<TextReply, 'kind' | 'text'> = {}): TextReply {
    // Ignored, `cutAfterToken: 2` sent the whole answer to a test of a cut stream.
    refuseUnknownOptions(options, TEXT_OPTION_NAMES, 'reply.text()')
    checkFinishReason(options.finishReason)
    checkUsage('reply.text()', options.usage)
    const built: TextReply = { ...options, kind: 'text', text }
    checkReplyFields('reply.text()', built)
    return built
  },
  /** Any status, body and headers, verbatim. */
  error(
    status: number,
    body: unknown,
    headers: Record<string, string> = {},
    options: { latencyMs?: number } = {},
  ): ErrorReply {
    refuseUnknownOptions(options, ERROR_OPTION_NAMES, 'reply.error()')
    const built: ErrorReply = { kind: 'error', status, body, headers, ...options }
    checkReplyFields('reply.error()', built)
    return built
  },
  /** No answer at all, or (with `afterHeaders`) a 200 stream that never sends a token. */
  hang(options: Omit<HangReply, 'kind'> = {}): HangReply {
    refuseUnknownOptions(options, HANG_OPTION_NAMES, 'reply.hang()')
    checkReplyFields('reply.hang()', options)
    return { ...options, kind: 'hang' }
  },
}

const TEXT_OPTION_NAMES = Object.keys({
  tokens: true,
  thinking: true,
  signature: true,
  toolCalls: true,
  finishReason: true,
  usage: true,
  model: true,
  headers: true,
  cutAfterTokens: true,
  streamError: true,
  latencyMs: true,
  firstTokenDelayMs: true,
  tokenDelayMs: true,
  keepAliveEveryMs: true,
  splitBytes: true,
  writeGapMs: true,
} satisfies Record<keyof Omit<TextReply, 'kind' | 'text'>, true>)

const ERROR_OPTION_NAMES = ['latencyMs']

const HANG_OPTION_NAMES = Object.keys({
  afterHeaders: true,
  keepAliveEveryMs: true,
} satisfies Record<keyof Omit<HangReply, 'kind'>, true>)

type FinishReason = NonNullable<TextReply['finishReason']>

const FINISH_REASONS = Object.keys({
  stop: true,
  length: true,
  tool_calls: true,
  content_filter: true,
} satisfies Record<FinishReason, true>)

/** The providers' own words for the reasons, each mapped by the fake from the one meant. */
const PROVIDER_WORDS: ReadonlyMap<string, FinishReason> = new Map([
  ['end_turn', 'stop'],
  ['stop_sequence', 'stop'],
  ['normal', 'stop'],
  ['max_tokens', 'length'],
  ['tool_use', 'tool_calls'],
  ['function_call', 'tool_calls'],
  ['refusal', 'content_filter'],
  ['safety', 'content_filter'],
])

/**
 * The reason must be one the answer plan maps to each dialect's word: an
 * Anthropic `max_tokens` (meant as `length`) left the answer without a
 * `stop_reason`, and a Gemini one without a `finishReason`.
 */
function checkFinishReason(value: unknown): void {
  if (value === undefined || FINISH_REASONS.includes(value as string)) return
  const shown = typeof value === 'string' ? JSON.stringify(value.slice(0, 40)) : String(value)
  const word = typeof value === 'string' ? value.toLowerCase() : ''
  const meant = FINISH_REASONS.find((reason) => reason === word) ?? PROVIDER_WORDS.get(word)
  throw new TypeError(
    `reply.text(): finishReason must be one of ${FINISH_REASONS.join(', ')} (the fake sends each dialect's word for it), got ${shown}${meant === undefined ? '' : ` (did you mean ${meant}?)`}`,
  )
}
