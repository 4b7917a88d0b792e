import type { ChatRequest, ContentBlock } from '../types.js'
import { blocksOf } from './blocks.js'
import type { BuiltRequest } from './Dialect.js'

export const ANTHROPIC_VERSION = '2023-06-01'

type Role = 'user' | 'assistant'

/**
 * Normalised request → `POST /v1/messages` body. System messages become the
 * top-level `system`; tool results travel in a user turn (Anthropic has no
 * `tool` role); consecutive turns of one role are merged, since the API
 * wants them alternating. A thinking block without a signature is dropped:
 * Anthropic rejects unsigned thinking, and after a fallback the signature is
 * gone by design.
 */
export function buildAnthropicRequest(request: ChatRequest, model: string): BuiltRequest {
  const system: string[] = []
  const turns: { role: Role; content: Record<string, unknown>[] }[] = []
  for (const message of request.messages) {
    if (message.role === 'system') {
      for (const b of blocksOf(message)) if (b.type === 'text') system.push(b.text)
      continue
    }
    const role: Role = message.role === 'assistant' ? 'assistant' : 'user'
    const content = blocksOf(message).flatMap(toAnthropicBlock)
    if (content.length === 0) continue
    const last = turns.at(-1)
    if (last?.role === role) last.content.push(...content)
    else turns.push({ role, content })
  }
  const body: Record<string, unknown> = {
    model,
    max_tokens: request.maxTokens,
    messages: turns,
  }
  if (system.length > 0) body['system'] = system.join('\n\n')
  if (request.temperature !== undefined) body['temperature'] = request.temperature
  if (request.topP !== undefined) body['top_p'] = request.topP
  if (request.stop !== undefined && request.stop.length > 0) body['stop_sequences'] = request.stop
  if (request.tools !== undefined && request.tools.length > 0) {
    body['tools'] = request.tools.map((t) => ({
      name: t.name,
      ...(t.description === undefined ? {} : { description: t.description }),
      input_schema: t.parameters,
    }))
  }
  if (request.stream) body['stream'] = true
  return { path: '/v1/messages', body, headers: { 'anthropic-version': ANTHROPIC_VERSION } }
}

function toAnthropicBlock(block: ContentBlock): Record<string, unknown>[] {
  switch (block.type) {
    case 'text':
      return block.text === '' ? [] : [{ type: 'text', text: block.text }]
    case 'thinking':
      return block.signature
        ? [{ type: 'thinking', thinking: block.thinking, signature: block.signature }]
        : []
    case 'tool_call':
      return [{ type: 'tool_use', id: block.id, name: block.name, input: block.arguments ?? {} }]
    case 'tool_result':
      return [
        {
          type: 'tool_result',
          tool_use_id: block.toolCallId,
          content: block.content,
          ...(block.isError ? { is_error: true } : {}),
        },
      ]
  }
}
