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
  /** Tokens the model generated: with a stop sequence, those that wrote it too (billed, not sent). */
  generatedTokens: number
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
 *
 * A model writes token by token and checks the stop sequences after each:
 * it stops on the token that completes one, so the sequence's tokens are
 * generated — billed though not sent (reported of OpenAI's
 * `completion_tokens`; the same generation everywhere) — and must fit in
 * the cap. A cap that runs out before that token is a cap (`length`),
 * whatever the scripted text would have gone on to say.
 */
export function applyOutputLimits(parts: GeneratedParts, limits: OutputLimits): LimitedParts {
  const thinking = parts.thinkingTokens.length
  const cap = limits.maxTokens
  const stop = firstStop(parts.textTokens, limits.stopSequences)
  if (stop !== undefined && (cap === undefined || thinking + stop.tokens <= cap)) {
    return {
      thinkingTokens: parts.thinkingTokens,
      textTokens: tokensBefore(parts.textTokens, stop.at),
      toolCalls: [],
      finishReason: 'stop',
      stopSequence: stop.sequence,
      generatedTokens: thinking + stop.tokens,
    }
  }
  const total = thinking + parts.textTokens.length + pieceCount(parts.toolCalls)
  if (cap === undefined || total <= cap) {
    return { ...parts, finishReason: undefined, stopSequence: undefined, generatedTokens: total }
  }
  let left = cap
  const take = <T>(items: T[]): T[] => {
    const kept = items.slice(0, left)
    left -= kept.length
    return kept
  }
  const thinkingTokens = take(parts.thinkingTokens)
  const textTokens = take(parts.textTokens)
  const calls: GeneratedParts['toolCalls'] = []
  for (const call of parts.toolCalls) {
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
    generatedTokens: cap,
  }
}

function pieceCount(calls: GeneratedParts['toolCalls']): number {
  return calls.reduce((n, c) => n + c.pieces.length, 0)
}

/**
 * The stop sequence the model meets first: the one completed by the
 * earliest token, as a model checks after each token it writes — not the
 * one that starts first (with tokens 'one', ' two', ' three', ' four',
 * ' five.', "our" stops at ' four' before "four five" is ever written).
 * Completed by the same token, the one that starts first (the shorter
 * text), at one place the longest. `tokens`: how many text tokens were
 * written, the completing one included; `at`: where the text ends.
 */
function firstStop(
  tokens: string[],
  stops: string[],
): { at: number; tokens: number; sequence: string } | undefined {
  const text = tokens.join('')
  let found: { at: number; tokens: number; sequence: string } | undefined
  for (const sequence of stops) {
    const at = text.indexOf(sequence)
    if (at < 0) continue
    const written = tokensThrough(tokens, at + sequence.length)
    if (
      found === undefined ||
      written < found.tokens ||
      (written === found.tokens &&
        (at < found.at || (at === found.at && sequence.length > found.sequence.length)))
    )
      found = { at, tokens: written, sequence }
  }
  return found
}

/** How many tokens it takes to write `text.slice(0, end)` (end > 0). */
function tokensThrough(tokens: string[], end: number): number {
  let at = 0
  for (let i = 0; i < tokens.length; i++) {
    at += tokens[i]!.length
    if (at >= end) return i + 1
  }
  return tokens.length
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
