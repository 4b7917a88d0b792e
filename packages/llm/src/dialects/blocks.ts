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
 * Whether a provider's usage said anything: one of its counts is a finite
 * non-negative number. A missing `usage` (or one of nulls) is read as zeros
 * by `usageOf`; this tells those zeros from a report of none
 * (`ChatResponse.usageReported`).
 */
export function anyCount(...values: unknown[]): boolean {
  return values.some(isCount)
}

export function usageOf(inputTokens: unknown, outputTokens: unknown): Usage {
  return { inputTokens: count(inputTokens), outputTokens: count(outputTokens) }
}

/**
 * `usage` with the cached-input and reasoning counts the provider reported
 * (`Usage.cachedInputTokens`, `Usage.reasoningTokens`). A count that is not
 * a finite non-negative number was not reported: the field stays absent,
 * not 0, so "none cached" and "not said" stay apart.
 */
export function withUsageDetails(usage: Usage, cached: unknown, reasoning: unknown): Usage {
  if (isCount(cached)) usage.cachedInputTokens = cached
  if (isCount(reasoning)) usage.reasoningTokens = reasoning
  return usage
}

/** A finite number ≥ 0: a count the provider reported. */
export function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0
}

function count(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : 0
}

export function mapFinish(
  table: Readonly<Record<string, FinishReason>>,
  value: unknown,
): FinishReason {
  return typeof value === 'string' && Object.hasOwn(table, value) ? table[value]! : 'unknown'
}
