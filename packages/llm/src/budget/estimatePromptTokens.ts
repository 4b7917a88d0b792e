import { argumentsText } from '../dialects/blocks.js'
import type { ChatMessage, ChatRequest, ContentBlock } from '../types.js'
import { textWeight } from './textWeight.js'
import { toolUsePromptTokens } from './toolUsePromptTokens.js'

/**
 * A deliberately pessimistic prompt-size estimate, in tokens, made without a
 * tokenizer (tokenizers differ per provider and are megabytes of data):
 *
 * - ASCII text: `ceil(chars / 4)` — the usual English rule of thumb;
 * - every non-ASCII code point counts as one whole token, because CJK text
 *   runs close to one token per character and chars/4 would undercount it
 *   four-fold — an undercount would let the budget be overspent
 *   (`textWeight`: output charged by estimate is counted the same way);
 * - plus 4 tokens per message for role and framing;
 * - tool calls and tool definitions are counted as their JSON text;
 * - so are the request's other fields (`extra`): a `response_format` JSON
 *   schema is billed as input as tools are, and left out, a request of
 *   "hi" with a 400 kB schema was estimated at 6 tokens and billed ~100k;
 * - for the `anthropic` dialect (`dialect`: the adapter's `dialect.name`),
 *   the tool-use system prompt Anthropic adds to a request with tools
 *   (`toolUsePromptTokens`: 346 tokens).
 *
 * Good for a budget check before sending; never for billing (that uses the
 * usage the provider reports).
 *
 * Never throws: a value JSON cannot hold (a BigInt, a cycle, one nested
 * deeper than the stack allows) counts nothing here. It ran before the
 * request was built (a cost budget, a TPM limit), so such a value failed the
 * call with a raw TypeError — even a call OpenAI's wire sends as its
 * `rawArguments` text, which is what a tool call counts as — instead of
 * reaching the builder, which refuses it with `InvalidChatRequestError`.
 */
export function estimatePromptTokens(
  request: Pick<ChatRequest, 'messages' | 'tools' | 'extra'>,
  dialect?: string,
): number {
  let weight = 0
  for (const message of request.messages) weight += textWeight(messageText(message))
  if (request.tools !== undefined) weight += textWeight(jsonText(request.tools))
  if (request.extra !== undefined) weight += textWeight(jsonText(request.extra))
  return (
    Math.ceil(weight / 4) +
    MESSAGE_OVERHEAD_TOKENS * request.messages.length +
    toolUsePromptTokens(request, dialect)
  )
}

/** Tokens a per-message framing costs in the estimate above. */
export const MESSAGE_OVERHEAD_TOKENS = 4

function messageText(message: ChatMessage): string {
  if (typeof message.content === 'string') return message.content
  return message.content.map(blockText).join('')
}

function blockText(block: ContentBlock): string {
  switch (block.type) {
    case 'text':
      return block.text
    case 'thinking':
      return block.thinking
    case 'tool_call':
      // The text that goes out: OpenAI's wire sends `rawArguments` as they are.
      return block.name + (block.rawArguments ?? argumentsText(block.arguments) ?? '')
    case 'tool_result':
      return block.content
  }
}

/** `value` as JSON text; `''` when it has none or cannot be written. */
function jsonText(value: unknown): string {
  try {
    return JSON.stringify(value) ?? ''
  } catch {
    return ''
  }
}

/**
 * The tokens of a request's `extra.prediction` (OpenAI's Predicted Outputs),
 * counted as the prompt is: the predicted tokens the answer does not use
 * are billed as output ("rejected prediction tokens", inside
 * `completion_tokens`) beyond `max_completion_tokens`, so an attempt's worst
 * case holds all of them as output. 0 without a prediction.
 */
export function predictedOutputTokens(request: Pick<ChatRequest, 'extra'>): number {
  const prediction = request.extra?.['prediction']
  if (prediction === undefined || prediction === null) return 0
  return estimatePromptTokens({ messages: [], extra: { prediction } })
}
