import { describeValue } from '@hourglass/core'
import { dialects } from '../dialects/dialects.js'
import type { ChatRequest } from '../types.js'
import {
  ADAPTER_OPTION_NAMES,
  checkOptionsObject,
  refuseUnknownAdapterOptions,
} from './checkAdapterOptions.js'
import { type BodyHook, createAdapter } from './createAdapter.js'
import type { AdapterOptions, ModelAdapter } from './ModelAdapter.js'

/** The dialects `openAICompatible` speaks: every one on OpenAI's wire. */
const OPENAI_COMPATIBLE: readonly string[] = ['openai', 'deepseek', 'qwen', 'ernie', 'doubao']

export interface OpenAICompatibleOptions extends AdapterOptions {
  /** Whose errors (and `max_tokens` spelling) to expect. Default `'openai'`. */
  dialect?: 'openai' | 'deepseek' | 'qwen' | 'ernie' | 'doubao' | undefined
  /**
   * Send the text of earlier thinking blocks back as `reasoning_content` on
   * assistant turns — what DeepSeek's and Kimi's thinking-with-tools modes
   * ask for. Default `false`: chat completions has no thinking field, and
   * older reasoners refuse it.
   */
  replayThinking?: boolean | undefined
}

/** Every option `openAICompatible` reads: an adapter's, and its own two. */
const OPTION_NAMES: readonly string[] = [
  ...ADAPTER_OPTION_NAMES,
  ...Object.keys({ dialect: true, replayThinking: true } satisfies Record<
    Exclude<keyof OpenAICompatibleOptions, keyof AdapterOptions>,
    true
  >),
]

/**
 * A model behind an OpenAI-compatible `POST {baseURL}/chat/completions`:
 * OpenAI, DeepSeek, Qwen (compatible mode), ERNIE (Qianfan v2), Doubao (Ark).
 * `Authorization: Bearer <key>`.
 */
export function openAICompatible(options: OpenAICompatibleOptions): ModelAdapter {
  checkOptionsObject('openAICompatible', options)
  refuseUnknownAdapterOptions('openAICompatible()', options, OPTION_NAMES)
  const name = options.dialect ?? 'openai'
  // Looked up unchecked, an unknown name (`'mistral'`) failed as "Cannot
  // read properties of undefined"; Anthropic's and Gemini's have adapters
  // of their own.
  if (typeof name !== 'string' || !OPENAI_COMPATIBLE.includes(name)) {
    throw new TypeError(
      `openAICompatible: dialect must be one of ${OPENAI_COMPATIBLE.map((d) => `'${d}'`).join(', ')} (anthropic() and gemini() are adapters of their own), got ${describeValue(name)}`,
    )
  }
  const dialect = dialects[name]
  // createAdapter reads an adapter's options only, and refuses the rest: each
  // read by name, as createAdapter would (a rest spread kept own keys only,
  // and an options class serving `apiKey` from a getter lost its key).
  const adapterOptions: Record<string, unknown> = {}
  for (const key of ADAPTER_OPTION_NAMES) {
    const value = (options as unknown as Record<string, unknown>)[key]
    if (value !== undefined) adapterOptions[key] = value
  }
  return createAdapter(
    dialect,
    adapterOptions as unknown as AdapterOptions,
    options.replayThinking ? replayThinking : undefined,
  )
}

/** The n-th assistant message sent is the n-th assistant turn of the history (one each). */
const replayThinking: BodyHook = (body, request: ChatRequest) => {
  const sent = body['messages']
  if (!Array.isArray(sent)) return body
  const thoughts = request.messages
    .filter((m) => m.role === 'assistant')
    .map((m) =>
      typeof m.content === 'string'
        ? ''
        : m.content.flatMap((b) => (b.type === 'thinking' ? [b.thinking] : [])).join(''),
    )
  let n = 0
  const messages = sent.map((message: Record<string, unknown>) => {
    if (message['role'] !== 'assistant') return message
    const thinking = thoughts[n++]
    return thinking ? { ...message, reasoning_content: thinking } : message
  })
  return { ...body, messages }
}
