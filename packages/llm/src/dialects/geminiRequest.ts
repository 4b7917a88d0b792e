import type { ChatMessage, ChatRequest, ContentBlock } from '../types.js'
import { blocksOf } from './blocks.js'
import type { BuiltRequest } from './Dialect.js'

type Role = 'user' | 'model'

/**
 * Normalised request → `generateContent` (or `streamGenerateContent?alt=sse`)
 * body. System text becomes `systemInstruction`; a tool result becomes a
 * `functionResponse`, which Gemini matches by function *name*, so the name is
 * looked up from the call with the same id earlier in the history. A signed
 * thinking block hands its signature to the next part as `thoughtSignature`
 * (Gemini signs the part that follows the thought, not the thought).
 */
export function buildGeminiRequest(request: ChatRequest, model: string): BuiltRequest {
  const names = toolNames(request.messages)
  const system: string[] = []
  const contents: { role: Role; parts: Record<string, unknown>[] }[] = []
  for (const message of request.messages) {
    if (message.role === 'system') {
      for (const b of blocksOf(message)) if (b.type === 'text') system.push(b.text)
      continue
    }
    const role: Role = message.role === 'assistant' ? 'model' : 'user'
    const parts = toParts(blocksOf(message), names)
    if (parts.length === 0) continue
    const last = contents.at(-1)
    if (last?.role === role) last.parts.push(...parts)
    else contents.push({ role, parts })
  }
  const generationConfig: Record<string, unknown> = { maxOutputTokens: request.maxTokens }
  if (request.temperature !== undefined) generationConfig['temperature'] = request.temperature
  if (request.topP !== undefined) generationConfig['topP'] = request.topP
  if (request.stop !== undefined && request.stop.length > 0) {
    generationConfig['stopSequences'] = request.stop
  }
  const body: Record<string, unknown> = { contents, generationConfig }
  if (system.length > 0) body['systemInstruction'] = { parts: [{ text: system.join('\n\n') }] }
  if (request.tools !== undefined && request.tools.length > 0) {
    body['tools'] = [
      {
        functionDeclarations: request.tools.map((t) => ({
          name: t.name,
          ...(t.description === undefined ? {} : { description: t.description }),
          parameters: t.parameters,
        })),
      },
    ]
  }
  const path = request.stream
    ? `/models/${encodeURIComponent(model)}:streamGenerateContent?alt=sse`
    : `/models/${encodeURIComponent(model)}:generateContent`
  return { path, body }
}

function toolNames(messages: readonly ChatMessage[]): Map<string, string> {
  const names = new Map<string, string>()
  for (const m of messages) {
    for (const b of blocksOf(m)) if (b.type === 'tool_call') names.set(b.id, b.name)
  }
  return names
}

function toParts(blocks: readonly ContentBlock[], names: Map<string, string>) {
  const parts: Record<string, unknown>[] = []
  let signature: string | undefined
  const signed = (part: Record<string, unknown>) => {
    if (signature !== undefined) part['thoughtSignature'] = signature
    signature = undefined
    parts.push(part)
  }
  for (const block of blocks) {
    switch (block.type) {
      case 'thinking':
        // Thought summaries are output only; the signature is what must go back.
        if (block.signature) signature = block.signature
        break
      case 'text':
        if (block.text !== '') signed({ text: block.text })
        break
      case 'tool_call':
        signed({ functionCall: { id: block.id, name: block.name, args: block.arguments ?? {} } })
        break
      case 'tool_result':
        parts.push({
          functionResponse: {
            id: block.toolCallId,
            name: names.get(block.toolCallId) ?? block.toolCallId,
            response: block.isError ? { error: block.content } : { result: block.content },
          },
        })
        break
    }
  }
  return parts
}
