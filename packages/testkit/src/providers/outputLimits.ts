import type { ProviderRoute } from './types.js'

/** What a request allows the model to write: a token cap and stop sequences. */
export interface OutputLimits {
  /** Output tokens at most, thinking included; undefined: no cap asked for. */
  maxTokens: number | undefined
  stopSequences: string[]
}

/** A scripted answer's generated parts, in the order a model writes them. */
export interface GeneratedParts {
  thinkingTokens: string[]
  textTokens: string[]
  toolCalls: {
    id: string
    name: string
    argumentsJson: string
    pieces: string[]
    /** Cut inside its arguments by the cap: `argumentsJson` is the pieces written. */
    cut?: boolean
  }[]
}

/** The parts the model got to write before a limit stopped it. */
export interface LimitedParts extends GeneratedParts {
  /** Undefined when no limit stopped the answer: the script's own reason stands. */
  finishReason: 'stop' | 'length' | undefined
  /** The stop sequence that ended the text (left out of it, as every API does). */
  stopSequence: string | undefined
}

/**
 * The request's own limits, where each API reads them: OpenAI-style
 * `max_completion_tokens` (else `max_tokens`) and `stop` (a string or a
 * list); Anthropic's `max_tokens` and `stop_sequences`; Gemini's
 * `generationConfig.maxOutputTokens` and `.stopSequences`; ERNIE's legacy
 * `max_output_tokens` and `stop`. A value the API would refuse (`0`, `'5'`)
 * is no limit here: the fake does not validate it.
 */
export function readOutputLimits(route: ProviderRoute, body: unknown): OutputLimits {
  const json = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>
  switch (route) {
    case 'openai-chat':
      return {
        maxTokens: count(json['max_completion_tokens']) ?? count(json['max_tokens']),
        stopSequences: sequences(json['stop']),
      }
    case 'anthropic-messages':
      return {
        maxTokens: count(json['max_tokens']),
        stopSequences: sequences(json['stop_sequences']),
      }
    case 'gemini': {
      const config = json['generationConfig'] as Record<string, unknown> | undefined
      return {
        maxTokens: count(config?.['maxOutputTokens']),
        stopSequences: sequences(config?.['stopSequences']),
      }
    }
    case 'ernie':
      return { maxTokens: count(json['max_output_tokens']), stopSequences: sequences(json['stop']) }
    default:
      return { maxTokens: undefined, stopSequences: [] }
  }
}

/**
 * Cuts an answer where a real model stops writing it. A stop sequence ends
 * the text before it (the sequence itself is not returned — OpenAI's "The
 * model response will not contain the stop sequence", Anthropic's
 * `stop_sequence`, Gemini's "the output will end at that point"), and
 * nothing comes after it: no tool call. The cap counts every generated
 * token, thinking first (OpenAI's reasoning tokens count against
 * `max_completion_tokens`, Claude's thinking against `max_tokens`, Gemini
 * 2.5's thoughts against `maxOutputTokens` — an answer whose thinking used
 * the cap up has no text and says `MAX_TOKENS`), then the text, then the
 * tool calls' argument pieces; a call cut inside its arguments keeps the
 * pieces written. The fake ignored both and sent the whole scripted
 * answer with `stop`, so a client's handling of a truncated answer was
 * never exercised.
 */
export function applyOutputLimits(parts: GeneratedParts, limits: OutputLimits): LimitedParts {
  let { textTokens, toolCalls } = parts
  let finishReason: LimitedParts['finishReason']
  let stopSequence: string | undefined
  const stop = firstStop(textTokens.join(''), limits.stopSequences)
  if (stop !== undefined) {
    textTokens = tokensBefore(textTokens, stop.at)
    toolCalls = []
    finishReason = 'stop'
    stopSequence = stop.sequence
  }
  const cap = limits.maxTokens
  const total =
    parts.thinkingTokens.length +
    textTokens.length +
    toolCalls.reduce((n, c) => n + c.pieces.length, 0)
  if (cap === undefined || total <= cap) {
    return { ...parts, textTokens, toolCalls, finishReason, stopSequence }
  }
  let left = cap
  const take = <T>(items: T[]): T[] => {
    const kept = items.slice(0, left)
    left -= kept.length
    return kept
  }
  const thinkingTokens = take(parts.thinkingTokens)
  textTokens = take(textTokens)
  const calls: GeneratedParts['toolCalls'] = []
  for (const call of toolCalls) {
    if (left === 0) break
    const pieces = take(call.pieces)
    if (pieces.length === call.pieces.length) calls.push(call)
    else calls.push({ ...call, pieces, argumentsJson: pieces.join(''), cut: true })
  }
  return {
    thinkingTokens,
    textTokens,
    toolCalls: calls,
    finishReason: 'length',
    stopSequence: undefined,
  }
}

/** The earliest stop sequence in the text (at one place, the longest: it matched first). */
function firstStop(text: string, stops: string[]): { at: number; sequence: string } | undefined {
  let found: { at: number; sequence: string } | undefined
  for (const sequence of stops) {
    const at = text.indexOf(sequence)
    if (at < 0) continue
    if (
      found === undefined ||
      at < found.at ||
      (at === found.at && sequence.length > found.sequence.length)
    )
      found = { at, sequence }
  }
  return found
}

/** The tokens that make up `text.slice(0, end)`; a token the end falls inside is kept in part. */
function tokensBefore(tokens: string[], end: number): string[] {
  const kept: string[] = []
  let at = 0
  for (const token of tokens) {
    if (at >= end) break
    kept.push(at + token.length <= end ? token : token.slice(0, end - at))
    at += token.length
  }
  return kept
}

function count(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) && value >= 1 ? value : undefined
}

/** A string or a list of strings; an empty one never matches (the APIs refuse it). */
function sequences(value: unknown): string[] {
  const list = typeof value === 'string' ? [value] : Array.isArray(value) ? value : []
  return list.filter((s): s is string => typeof s === 'string' && s !== '')
}
