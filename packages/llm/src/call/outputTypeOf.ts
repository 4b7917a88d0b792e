import type { LlmRequestParams } from '../channels.js'

/**
 * `response_format`'s type as the GenAI conventions' output type: `json`
 * for `json_object` and `json_schema`, `text` for `text`. Every dialect
 * reads the format from there in OpenAI's shape (Gemini translates it to
 * `responseMimeType`), so its `type` says what was asked whatever the wire.
 * A type llm does not know is left out rather than guessed at. What the
 * chat span records, and what tells the output-limit recovery that an
 * answer is a JSON document (never continued: `recoverOutputLimit`).
 */
export function outputTypeOf(format: unknown): LlmRequestParams['outputType'] {
  if (typeof format !== 'object' || format === null) return undefined
  const type = (format as { type?: unknown }).type
  if (type === 'json_object' || type === 'json_schema') return 'json'
  if (type === 'text') return 'text'
  return undefined
}
