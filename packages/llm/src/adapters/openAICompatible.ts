import { describeValue } from '@hourglass/core'
import { dialects } from '../dialects/dialects.js'
import { refuseLoneSurrogateIn } from '../dialects/refuseLoneSurrogates.js'
import { toolLoopTurns } from '../dialects/toolLoopTurns.js'
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
   * Send the text of earlier thinking blocks back on assistant turns, under
   * the name this adapter's server reads. `'deepseek'`, `'qwen'`, `'ernie'`
   * and `'doubao'` read `reasoning_content` (DeepSeek's and Kimi's
   * thinking-with-tools modes ask for it), whatever the thinking came under.
   * Dialect `'openai'`: `true` sends a turn's thinking as `reasoning` when it
   * was read from `reasoning` (vLLM, which reads no other, OpenRouter,
   * Ollama: `ThinkingBlock.field`), else as `reasoning_content`;
   * `'reasoning'` or `'reasoning_content'` names it for every turn (a vLLM
   * after another provider's turn; Kimi, which reads only
   * `reasoning_content`, after a vLLM's). Never both. `false`: nothing is
   * sent back. Default: `false`, but on dialect `'deepseek'`, whose thinking
   * mode (on by default for its current models) answers 400 "Missing
   * `reasoning_content` field in the assistant message at message index N"
   * for a turn of a tool loop sent without it: there every assistant turn
   * of a user turn in which the model called tools (the answer after the
   * results too) carries its thinking as `reasoning_content` (`""` when it
   * had none), and no other turn does (DeepSeek ignores those, and R1,
   * which refused the field, made no tool calls).
   */
  replayThinking?: boolean | 'reasoning' | 'reasoning_content' | undefined
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
    replayHook(name, options.replayThinking),
  )
}

/** The field a thinking turn goes back under; `'field'`: the one it came under. */
type ReplayName = 'reasoning' | 'reasoning_content' | 'field'

/**
 * The replay hook for `replayThinking` on dialect `dialect`, or none. The
 * name is this adapter's to choose, as it is its server that reads it: a
 * turn may have been answered by a fallback on another server (`runModels`
 * keeps a block's `field` for it). Chosen by the server that thought, a
 * DeepSeek primary was sent a vLLM fallback's `reasoning`, and its
 * thinking mode answered 400 for want of `reasoning_content`. A value that
 * is none of the four was refused by no one: `'yes'` replayed, as `true`.
 */
function replayHook(dialect: string, replay: unknown): BodyHook | undefined {
  // DeepSeek's thinking mode refuses a tool-call turn without its
  // `reasoning_content` (400 "Missing `reasoning_content` field in the
  // assistant message at message index N", api-docs.deepseek.com/guides/
  // thinking_mode#tool-calls); off by default, every runTurns tool loop
  // against deepseek-reasoner or deepseek-v4-* failed on its second turn.
  if (replay === undefined && dialect === 'deepseek') {
    return replayThinking('reasoning_content', {
      refuseLoneSurrogates: true,
      onlyToolLoops: true,
      emptyInToolLoops: true,
    })
  }
  if (replay === undefined || replay === false) return undefined
  if (replay !== true && replay !== 'reasoning' && replay !== 'reasoning_content') {
    throw new TypeError(
      `openAICompatible: replayThinking must be true, false, 'reasoning' or 'reasoning_content', got ${describeValue(replay)}`,
    )
  }
  if (dialect === 'openai') return replayThinking(replay === true ? 'field' : replay)
  // DeepSeek, Qwen, ERNIE and Doubao read `reasoning_content` only.
  if (replay === 'reasoning') {
    throw new TypeError(
      `openAICompatible: replayThinking 'reasoning' is not read by dialect '${dialect}', which reads reasoning_content (pass true or 'reasoning_content')`,
    )
  }
  const deepseek = dialect === 'deepseek'
  return replayThinking('reasoning_content', {
    refuseLoneSurrogates: deepseek,
    emptyInToolLoops: deepseek,
  })
}

interface ReplayOptions {
  /** Refuse a lone surrogate in the text sent (DeepSeek's parser refuses its escape). */
  refuseLoneSurrogates?: boolean
  /** Send it only on the assistant turns of a user turn that called tools (`toolLoopTurns`). */
  onlyToolLoops?: boolean
  /** Such a turn without thinking text still carries the field, as `""`. */
  emptyInToolLoops?: boolean
}

/**
 * The n-th assistant message sent is the n-th assistant turn of the history
 * (one each). Its thinking goes back under one name: `name`, or with
 * `'field'` `reasoning` when the server said it so (`ThinkingBlock.field`),
 * else `reasoning_content`. vLLM reads only `reasoning` and drops
 * `reasoning_content` without a word (vllm-project/vllm#38488), so a vLLM
 * tool loop replayed nothing; both names at once are not sent, as a server
 * may refuse a field it does not know.
 */
function replayThinking(name: ReplayName, options: ReplayOptions = {}): BodyHook {
  const { refuseLoneSurrogates = false, onlyToolLoops = false, emptyInToolLoops = false } = options
  return (body, request: ChatRequest) => {
    const sent = body['messages']
    if (!Array.isArray(sent)) return body
    const thoughts = request.messages.flatMap((m, i) => {
      if (m.role !== 'assistant') return []
      if (typeof m.content === 'string') return [{ text: '', field: 'reasoning_content', at: i }]
      const blocks = m.content.filter((b) => b.type === 'thinking')
      const said = blocks.some((b) => b.field === 'reasoning') ? 'reasoning' : 'reasoning_content'
      const text = blocks.map((b) => b.thinking).join('')
      return [{ text, field: name === 'field' ? said : name, at: i }]
    })
    const inToolTurn = toolLoopTurns(sent)
    let n = 0
    const messages = sent.map((message: Record<string, unknown>, at) => {
      if (message['role'] !== 'assistant') return message
      const thinking = thoughts[n++]
      const inLoop = inToolTurn[at] === true
      if (onlyToolLoops && !inLoop) return message
      if (thinking?.text) {
        // DeepSeek's parser refuses a lone surrogate's escape with a 400
        // that names no field the caller knows (`refuseLoneSurrogates`,
        // which reads what the builder sends: this text is added after it,
        // so read here, where it is sent).
        if (refuseLoneSurrogates) {
          refuseLoneSurrogateIn(thinking.text, `messages[${thinking.at}].content`, 'DeepSeek')
        }
        return { ...message, [thinking.field]: thinking.text }
      }
      // DeepSeek checks that the field is there, not that it says anything:
      // its own thinking-mode tool calls come with `reasoning_content: ""`
      // at times (HKUDS/nanobot#946, Oaklight/llm-rosetta#356), and such a
      // turn sent back without the field was its 400.
      if (!inLoop || !emptyInToolLoops) return message
      return { ...message, [thinking?.field ?? 'reasoning_content']: '' }
    })
    return { ...body, messages }
  }
}
