import type { ChatMessage, ContentBlock, FinishReason, Usage } from '../types.js'

/** A message's content as blocks: a plain string is one text block. */
export function blocksOf(message: ChatMessage): ContentBlock[] {
  return typeof message.content === 'string'
    ? [{ type: 'text', text: message.content }]
    : message.content
}

export function textOf(blocks: readonly ContentBlock[]): string {
  let text = ''
  for (const block of blocks) if (block.type === 'text') text += block.text
  return text
}

/** The refusal blocks' text joined (`ChatResponse.refusal`); undefined when the model did not refuse. */
export function refusalOf(blocks: readonly ContentBlock[]): string | undefined {
  let refusal: string | undefined
  for (const block of blocks) {
    if (block.type === 'text' && block.refusal === true) refusal = (refusal ?? '') + block.text
  }
  return refusal
}

/** Tool arguments arrive as JSON text; keep the raw text when it does not parse. */
export function parseArguments(text: string): unknown {
  if (text.trim() === '') return {}
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

export function stringifyArguments(args: unknown): string {
  return typeof args === 'string' ? args : JSON.stringify(args ?? {})
}

/**
 * Tool-call arguments as JSON text, or undefined when they cannot be
 * written: nested deeper than the stack allows. V8's JSON.parse reads any
 * depth, JSON.stringify recurses, so a provider's tool call nested 100 000
 * levels deep (a broken or hostile upstream's) parsed, then threw a raw
 * RangeError out of `callModel` wherever it was written again.
 */
export function argumentsText(args: unknown): string | undefined {
  if (typeof args === 'string') return args
  try {
    return JSON.stringify(args ?? {})
  } catch {
    return undefined
  }
}

/**
 * The first tool call of `blocks` whose arguments cannot be written as JSON
 * (`argumentsText`), if any. `textOnWire`: the dialect sends a call's
 * `rawArguments` as they are (OpenAI's wire), so one with them is written;
 * Anthropic and Gemini write the object, whatever text a call kept.
 */
export function unwritableToolCall(
  blocks: readonly ContentBlock[],
  textOnWire: boolean,
): (ContentBlock & { type: 'tool_call' }) | undefined {
  for (const block of blocks) {
    if (block.type !== 'tool_call' || (textOnWire && block.rawArguments !== undefined)) continue
    if (argumentsText(block.arguments) === undefined) return block
  }
  return undefined
}

/**
 * The largest token count kept: a provider's count past it (1e308, a JSON
 * `1e400` read as Infinity) is absurd, and is clamped here rather than
 * dropped or passed on — summed (Anthropic's input with its cache counts,
 * Gemini's output with its thoughts) or priced, 1e308 became Infinity: an
 * input of 0 tokens, or a spend of Infinity. Counts up to it stay exact,
 * and a few of them added, or priced, stay finite.
 */
export const MAX_TOKEN_COUNT = Number.MAX_SAFE_INTEGER

/**
 * A token count as the provider reported it, clamped to `MAX_TOKEN_COUNT`;
 * undefined when it said none: no number, NaN or negative.
 */
export function countOf(value: unknown): number | undefined {
  return typeof value === 'number' && value >= 0 ? Math.min(value, MAX_TOKEN_COUNT) : undefined
}

/**
 * Whether a provider's usage said anything: one of its counts is a
 * non-negative number. A missing `usage` (or one of nulls) is read as zeros
 * by `usageOf`; this tells those zeros from a report of none
 * (`ChatResponse.usageReported`).
 */
export function anyCount(...values: unknown[]): boolean {
  return values.some(isCount)
}

export function usageOf(inputTokens: unknown, outputTokens: unknown): Usage {
  return { inputTokens: countOf(inputTokens) ?? 0, outputTokens: countOf(outputTokens) ?? 0 }
}

/**
 * `usage` with the cached-input and reasoning counts the provider reported
 * (`Usage.cachedInputTokens`, `Usage.reasoningTokens`). A count that is not
 * a non-negative number was not reported: the field stays absent, not 0, so
 * "none cached" and "not said" stay apart.
 */
export function withUsageDetails(usage: Usage, cached: unknown, reasoning: unknown): Usage {
  const cachedTokens = countOf(cached)
  if (cachedTokens !== undefined) usage.cachedInputTokens = cachedTokens
  const reasoningTokens = countOf(reasoning)
  if (reasoningTokens !== undefined) usage.reasoningTokens = reasoningTokens
  return usage
}

/** A number ≥ 0: a count the provider reported (`countOf` clamps it). */
export function isCount(value: unknown): boolean {
  return countOf(value) !== undefined
}

export function mapFinish(
  table: Readonly<Record<string, FinishReason>>,
  value: unknown,
): FinishReason {
  return typeof value === 'string' && Object.hasOwn(table, value) ? table[value]! : 'unknown'
}
