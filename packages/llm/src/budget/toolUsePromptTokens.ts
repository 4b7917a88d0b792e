import type { ChatRequest } from '../types.js'

/**
 * The system prompt Anthropic adds to a request that carries tools, billed
 * as input beyond the tools' own definitions: 346 tokens with `tool_choice`
 * `auto` or `none`, 313 with `any` or a named tool, for the Claude 4 models,
 * Sonnet 3.7 and Haiku 3.5 ("Tool use system prompt token count", Anthropic's
 * tool-use pricing docs; Claude 3 Haiku 264/340, Claude 3 Sonnet 159/235).
 * The largest of a model still served is counted whatever the choice: the
 * estimate it joins is pessimistic.
 */
export const ANTHROPIC_TOOL_USE_PROMPT_TOKENS = 346

/**
 * Tokens the provider of `dialect` adds to `request`'s prompt for its tools:
 * Anthropic's tool-use system prompt when the request offers tools, or when
 * its history holds a tool call (the Anthropic dialect then declares the
 * functions called, `declareHistoryTools`, and the prompt comes with them).
 * Left out, a short Anthropic request with a tool was estimated at a fraction
 * of what it is billed, for the cost budget's holds and admission's TPM
 * weight alike. 0 for the other dialects, which document no such prompt.
 */
export function toolUsePromptTokens(
  request: Pick<ChatRequest, 'messages' | 'tools'>,
  dialect: string | undefined,
): number {
  if (dialect !== 'anthropic') return 0
  const offered = request.tools !== undefined && request.tools.length > 0
  return offered || request.messages.some(callsTool) ? ANTHROPIC_TOOL_USE_PROMPT_TOKENS : 0
}

function callsTool(message: ChatRequest['messages'][number]): boolean {
  return typeof message.content !== 'string' && message.content.some((b) => b.type === 'tool_call')
}
