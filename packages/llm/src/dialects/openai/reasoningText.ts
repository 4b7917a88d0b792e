import { getString } from '../safeJson.js'

/**
 * The thinking text of an OpenAI-compatible message or delta: DeepSeek's
 * `reasoning_content` (Qwen, Ark, Qianfan), else `reasoning` — vLLM's name
 * for it since vllm-project/vllm#27752 (`reasoning_content` removed by
 * #33402), OpenRouter's and Ollama's. Read under the first name only, vLLM's
 * thinking was dropped, and a stream that thought before its first word was
 * held back as one with no token, then failed at `firstTokenTimeoutMs`
 * while the model was generating it. A server that says it under both names
 * (vLLM during the rename) is read once.
 */
export function reasoningText(value: unknown): string | undefined {
  return getString(value, 'reasoning_content') || getString(value, 'reasoning') || undefined
}

/**
 * `reasoningText` as a thinking block (a thinking event has the same
 * shape), marked `field: 'reasoning'` when the server said it under that
 * name, with `reasoning_content` beside it or not: vLLM reads only
 * `reasoning` on an assistant message (vllm-project/vllm#38488), so
 * `replayThinking: true` on dialect `'openai'` sends it back under that name. Unmarked, it went back as
 * `reasoning_content`, which vLLM drops without a word.
 */
export function reasoningThinking(
  value: unknown,
): { type: 'thinking'; thinking: string; field?: 'reasoning' } | undefined {
  const thinking = reasoningText(value)
  if (thinking === undefined) return undefined
  return getString(value, 'reasoning')
    ? { type: 'thinking', thinking, field: 'reasoning' }
    : { type: 'thinking', thinking }
}
