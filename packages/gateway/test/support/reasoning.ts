import type OpenAI from 'openai'

/** A whole answer's message as the gateway sends it: DeepSeek's `reasoning_content` beside OpenAI's fields. */
export type ReasoningMessage = OpenAI.ChatCompletionMessage & { reasoning_content?: unknown }

type Delta = OpenAI.ChatCompletionChunk.Choice.Delta & { reasoning_content?: string }

/** A stream's `reasoning_content` and `content` deltas, each joined. */
export async function readReasoning(
  stream: AsyncIterable<OpenAI.ChatCompletionChunk>,
): Promise<{ reasoning: string; content: string }> {
  let reasoning = ''
  let content = ''
  for await (const chunk of stream) {
    const delta = chunk.choices[0]?.delta as Delta | undefined
    reasoning += delta?.reasoning_content ?? ''
    content += delta?.content ?? ''
  }
  return { reasoning, content }
}
