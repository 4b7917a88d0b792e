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
