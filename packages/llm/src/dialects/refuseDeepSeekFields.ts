import { InvalidChatRequestError } from '../errors/InvalidChatRequestError.js'
import type { ChatRequest } from '../types.js'
import { refuseLoneSurrogates } from './refuseLoneSurrogates.js'

/**
 * What DeepSeek's Chat Completions refuse though they speak OpenAI's wire:
 * `response_format` of type `json_schema` — it takes `text` and
 * `json_object` (JSON mode) only, and answers 400 "This response_format type
 * is unavailable now" (llm-exe/llm-exe#662, khoj-ai/khoj#1336). Refused
 * before anything is sent, naming the field: the provider's 400 names
 * none, costs a round trip, and is a bad request that never falls back.
 * So is a lone surrogate, which DeepSeek's JSON parser refuses
 * (`refuseLoneSurrogates`).
 */
export function refuseDeepSeekFields(request: ChatRequest): void {
  refuseLoneSurrogates(request, 'DeepSeek', 'openai')
  const format = request.extra?.['response_format']
  if (
    typeof format === 'object' &&
    format !== null &&
    (format as { type?: unknown }).type === 'json_schema'
  ) {
    throw new InvalidChatRequestError(
      'response_format.type',
      '"json_schema" is refused by DeepSeek, which has no structured outputs; type "json_object" (JSON mode, the schema described in the prompt) is accepted',
    )
  }
}
