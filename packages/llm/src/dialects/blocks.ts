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

export function usageOf(inputTokens: unknown, outputTokens: unknown): Usage {
  return { inputTokens: count(inputTokens), outputTokens: count(outputTokens) }
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
