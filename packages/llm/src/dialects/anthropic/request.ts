import { quoted } from '@hourglass/core'
import { InvalidChatRequestError } from '../../errors/InvalidChatRequestError.js'
import type { ChatMessage, ChatRequest, ContentBlock } from '../../types.js'
import { blocksOf } from '../blocks.js'
import type { BuiltRequest } from '../Dialect.js'
import { isBlank } from '../isBlank.js'
import { refuseEmptyLastTurn } from '../refuseEmptyLastTurn.js'
import { refuseLoneSurrogates } from '../refuseLoneSurrogates.js'
import { refuseStreamOptions } from '../refuseStreamOptions.js'
import { refuseStrictTools } from '../refuseStrictTools.js'
import { requestToolSettings } from '../requestToolSettings.js'
import { argumentsObject } from '../toolArguments.js'
import { toolChoiceName } from '../toolChoiceName.js'
import { anthropicOutputFormat } from './anthropicOutputFormat.js'
import { declareHistoryTools } from './historyTools.js'
import { anthropicInputSchema } from './inputSchema.js'
import { refuseModelEffort } from './refuseModelEffort.js'
import { refuseModelOutputFormat } from './refuseModelOutputFormat.js'
import { refuseModelSampling } from './refuseModelSampling.js'
import { refuseModelThinking } from './refuseModelThinking.js'
import { refusePrefill } from './refusePrefill.js'
import { applyAnthropicThinking, refuseForcedToolWhileThinking } from './thinking.js'
import { AnthropicToolIds } from './toolUseId.js'
import { anthropicUserId } from './userId.js'

export const ANTHROPIC_VERSION = '2023-06-01'

type Role = 'user' | 'assistant'

/**
 * Normalised request → `POST /v1/messages` body. System messages become the
 * top-level `system`; tool results travel in a user turn (Anthropic has no
 * `tool` role); consecutive turns of one role are merged, since the API
 * wants them alternating. A thinking block without a signature is dropped:
 * Anthropic rejects unsigned thinking, and after a fallback the signature is
 * gone by design. Tool-call ids Anthropic would refuse (another provider's
 * `functions.f:0`) or that repeat an earlier call's are rewritten, call and
 * result alike (`AnthropicToolIds`);
 * a history with tool calls and no `tools` declares the functions it called
 * (`declareHistoryTools`). A message `name` has no equivalent and throws
 * `InvalidChatRequestError`; so do tool-call arguments that are not a JSON
 * object (`tool_use.input` is one), and an empty last user message, which
 * dropped would turn the request into a prefill (`refuseEmptyLastTurn`),
 * and a lone half of a surrogate pair, which Anthropic's JSON parser
 * refuses (`refuseLoneSurrogates`). So do a `temperature` but 1 or any
 * `top_p` to Opus 4.7 and later and the Claude 5 models, and both to the
 * Claude 4 models that take one of them (`refuseModelSampling`), and a
 * prefill to Claude 4.6 and later (`refusePrefill`), and a
 * `reasoning_effort` but `none` to the Claude 3 models before 3.7 Sonnet,
 * which do not think (`refuseModelThinking`), and a `response_format`
 * schema to a model without structured outputs, or beside a prefill
 * (`refuseModelOutputFormat`): those models' 400s.
 */
export function buildAnthropicRequest(request: ChatRequest, model: string): BuiltRequest {
  refuseLoneSurrogates(request, 'Anthropic', 'anthropic')
  const system: string[] = []
  const turns: { role: Role; content: Record<string, unknown>[] }[] = []
  // The last message anything was sent of (see refuseEmptyLastTurn).
  let lastSent = -1
  const toolIds = new AnthropicToolIds()
  for (let i = 0; i < request.messages.length; i++) {
    const message = request.messages[i] as ChatMessage
    if (message.name !== undefined) {
      throw new InvalidChatRequestError(
        `messages[${i}].name`,
        'Anthropic has no equivalent of message names',
      )
    }
    if (message.role === 'system') {
      for (const b of blocksOf(message))
        if (b.type === 'text' && !isBlank(b.text)) system.push(b.text)
      continue
    }
    const role: Role = message.role === 'assistant' ? 'assistant' : 'user'
    const content = toAnthropicContent(blocksOf(message), i, toolIds)
    if (content.length === 0) continue
    lastSent = i
    const last = turns.at(-1)
    // One at a time: spread as arguments, a message of 130,000 text parts
    // (3.5 MB) after one of the same role overflowed the stack.
    if (last?.role === role) for (const block of content) last.content.push(block)
    else turns.push({ role, content })
  }
  if (turns.length === 0) {
    // Messages API: `messages` needs at least one message (system text goes
    // in the top-level `system`, not in `messages`), and empty text blocks are
    // rejected, and so are blank ones: both are skipped above.
    // https://docs.anthropic.com/en/api/messages (messages: "Input messages").
    throw new InvalidChatRequestError(
      'messages',
      'Anthropic needs at least one user or assistant message with content besides system messages',
    )
  }
  refuseEmptyLastTurn(request.messages, lastSent, 'Anthropic')
  trimPrefill(turns.at(-1) as { role: Role; content: Record<string, unknown>[] })
  const body: Record<string, unknown> = {
    model,
    max_tokens: request.maxTokens,
    messages: turns,
  }
  if (system.length > 0) body['system'] = system.join('\n\n')
  if (request.temperature !== undefined) {
    // Anthropic's range is 0–1, OpenAI's 0–2: a higher value would be
    // Anthropic's 400, which (a bad request) never falls back to the next model.
    if (request.temperature > 1) {
      throw new InvalidChatRequestError(
        'temperature',
        `Anthropic takes a temperature from 0 to 1, got ${request.temperature}`,
      )
    }
    body['temperature'] = request.temperature
  }
  // Claude Sonnet 4.5 and later answer 400 "`temperature` and `top_p` cannot
  // both be specified for this model" — and OpenAI clients often send both,
  // one of them at its neutral value (LangChain's and chat UIs' `top_p: 1`).
  // A neutral value asks for what Anthropic does anyway, so it is not sent:
  // `top_p: 1` (no nucleus cut), or `temperature: 1` (Anthropic's default)
  // beside a `top_p` that does cut. Two values that both change sampling go
  // to the models that take both (Claude 3, Opus and Sonnet 4), and are
  // refused to the others, last (`refuseModelSampling`).
  if (request.topP !== undefined && request.topP !== 1) {
    body['top_p'] = request.topP
    if (body['temperature'] === 1) delete body['temperature']
  }
  if (request.stop !== undefined && request.stop.length > 0) {
    body['stop_sequences'] = anthropicStopSequences(request.stop)
  }
  if (request.tools !== undefined && request.tools.length > 0) {
    refuseStrictTools(request.tools, 'Anthropic')
    body['tools'] = request.tools.map((t) => {
      // Set field by field: on Node 20 a field after a spread costs ~0.4 µs.
      const tool: Record<string, unknown> = { name: t.name }
      if (t.description !== undefined) tool['description'] = t.description
      tool['input_schema'] = anthropicInputSchema(t.parameters)
      return tool
    })
  }
  if (request.stream) body['stream'] = true
  const extra = requestToolSettings(request)
  if (extra !== undefined) applyExtra(extra, body, model)
  // A history with tool calls needs tools declared (Anthropic's 400 otherwise).
  if (body['tools'] === undefined) declareHistoryTools(turns, body)
  // Last: what only the newer models refuse (`provider_value`) must hide
  // none of the request's own refusals from a gateway checking a fallback
  // list (see `applyExtra`).
  refuseModelSampling(model, body)
  refuseForcedToolWhileThinking(model, body)
  refusePrefill(model, turns)
  refuseModelOutputFormat(model, body, turns)
  refuseModelThinking(model, request.extra?.['reasoning_effort'], turns)
  refuseModelEffort(model, request.extra?.['reasoning_effort'], turns)
  return { path: '/v1/messages', body, headers: { 'anthropic-version': ANTHROPIC_VERSION } }
}

/**
 * A conversation that ends with the assistant's turn is a prefill, and
 * Anthropic answers 400 to one whose text ends in whitespace ("final
 * assistant content cannot end with trailing whitespace"): a 400 never goes
 * to a fallback. Its last text block is sent without it, as LangChain's and
 * Anthropic.SDK's adapters do; earlier assistant turns go as they are (the
 * model's own words).
 */
function trimPrefill(last: { role: Role; content: Record<string, unknown>[] }): void {
  const block = last.content.at(-1)
  if (last.role !== 'assistant' || block?.['type'] !== 'text') return
  // Not blank (blank blocks are skipped), so something is left.
  block['text'] = (block['text'] as string).trimEnd()
}

/**
 * Anthropic answers 400 to a stop sequence that is empty ("each stop sequence
 * must be non-empty") or only whitespace ("each stop sequence must contain
 * non-whitespace": `stop: "\n"`, common in OpenAI prompts; BerriAI/litellm
 * #3286). That 400 is a bad request, never sent to a fallback: refused here
 * instead, before anything is sent, naming the sequence; dropping it would
 * let the answer run past where the client asked it to stop.
 */
function anthropicStopSequences(stop: readonly string[]): string[] {
  stop.forEach((sequence, i) => {
    if (sequence.trim() === '') {
      throw new InvalidChatRequestError(
        stop.length === 1 ? 'stop' : `stop[${i}]`,
        `Anthropic takes no stop sequence that is empty or only whitespace, got ${quoted(sequence, 20)}`,
      )
    }
  })
  return [...stop]
}

/**
 * The client's other Chat Completions fields (tool settings that mean
 * nothing without tools already left out, see `requestToolSettings`):
 * translated where Anthropic has an equivalent (`tool_choice`,
 * `parallel_tool_calls: false`, `user` and
 * `safety_identifier`; `reasoning_effort` → `thinking`, see
 * `applyAnthropicThinking`; a `response_format` schema →
 * `output_config.format`, see `anthropicOutputFormat`), kept when they ask
 * for Anthropic's default (`n: 1`, `response_format` text, `modalities`, `logprobs: false`, `top_logprobs: 0`,
 * penalties of 0, `store: false`, `service_tier: 'auto'`, `verbosity:
 * 'medium'`, `stream_options` without obfuscation); any other throws
 * naming it, so none is dropped silently.
 */
function applyExtra(
  extra: Record<string, unknown>,
  body: Record<string, unknown>,
  model: string,
): void {
  let toolChoice: Record<string, unknown> | undefined
  let effort: unknown
  let format: Record<string, unknown> | undefined
  let serialTools = false
  let user: string | undefined
  let safetyIdentifier: string | undefined
  for (const [field, value] of Object.entries(extra)) {
    if (value === undefined || value === null) continue
    if (field === 'tool_choice') toolChoice = anthropicToolChoice(value)
    else if (field === 'parallel_tool_calls' && typeof value === 'boolean') serialTools = !value
    else if (field === 'user' && typeof value === 'string') user = value
    else if (field === 'safety_identifier' && typeof value === 'string') safetyIdentifier = value
    else if (field === 'stream_options') refuseStreamOptions(value, 'Anthropic')
    else if (field === 'reasoning_effort') effort = value
    else if (field === 'response_format') format = anthropicOutputFormat(value)
    else if (!isDefault(field, value)) {
      throw new InvalidChatRequestError(field, 'Anthropic has no equivalent')
    }
  }
  if (serialTools && toolChoice?.['type'] !== 'none') {
    toolChoice ??= { type: 'auto' }
    toolChoice['disable_parallel_tool_use'] = true
  }
  if (toolChoice !== undefined) body['tool_choice'] = toolChoice
  // Last: what thinking cannot go beside is all in the body by now.
  if (effort !== undefined) applyAnthropicThinking(effort, model, body)
  // Beside the effort thinking may have put there: one `output_config`.
  if (format !== undefined) {
    body['output_config'] = { ...(body['output_config'] as object | undefined), format }
  }
  // After every other check: a value only Anthropic refuses (an email as the
  // id, `provider_value`) is skipped by a gateway checking a fallback list,
  // and thrown first it hid a refusal of the request itself (max_tokens under
  // the thinking budget) from that check.
  const userId = anthropicUserId(user, safetyIdentifier)
  if (userId !== undefined) body['metadata'] = { user_id: userId }
}

function anthropicToolChoice(value: unknown): Record<string, unknown> {
  if (value === 'auto') return { type: 'auto' }
  if (value === 'required') return { type: 'any' }
  if (value === 'none') return { type: 'none' }
  return { type: 'tool', name: toolChoiceName(value, 'Anthropic') }
}

/** A value that asks for what Anthropic does anyway. */
function isDefault(field: string, value: unknown): boolean {
  if (field === 'n') return value === 1
  if (field === 'logprobs') return value === false
  if (field === 'modalities') return Array.isArray(value) && value.every((m) => m === 'text')
  // OpenAI's own defaults, which clients (LangChain's ChatOpenAI among them)
  // send explicitly on every request: no penalty, nothing stored.
  if (field === 'frequency_penalty' || field === 'presence_penalty') return value === 0
  if (field === 'store') return value === false
  // More of them, filled in by clients and configs: refused, they failed a
  // request that asks for nothing an absent field does not. `service_tier:
  // 'auto'` is OpenAI's "when not set" and Anthropic's own default too (its
  // Priority Tier capacity when the organisation has some, else standard), so
  // the request goes as one without it, held by CostBudget as one without it
  // is (`auto`: the dearest tier the price lists). `verbosity: 'medium'` is
  // GPT-5's default length. `top_logprobs: 0` asks for no alternatives
  // (`logprobs: true`, which asks for the tokens' own, is refused above).
  // Not `prompt_cache_retention`: no value of it is a default to drop —
  // OpenAI's is `24h` for most organisations, and `in_memory` asks that the
  // cache stay in memory (never offloaded to storage), which Anthropic, not
  // asked, does not promise.
  if (field === 'service_tier') return value === 'auto'
  if (field === 'verbosity') return value === 'medium'
  if (field === 'top_logprobs') return value === 0
  return false
}

/** What a failed tool result with no content of its own says to Anthropic. */
const EMPTY_TOOL_ERROR_CONTENT = 'the tool failed, with no message'

/** A message's blocks → Anthropic's; `index` is the message's, for naming a tool call's arguments and pairing ids. */
function toAnthropicContent(
  blocks: readonly ContentBlock[],
  index: number,
  toolIds: AnthropicToolIds,
): Record<string, unknown>[] {
  const content: Record<string, unknown>[] = []
  let toolCalls = 0
  for (const block of blocks) {
    switch (block.type) {
      case 'text':
        // Anthropic answers 400 to a text block that is empty or only
        // whitespace ("text content blocks must contain non-whitespace text").
        if (!isBlank(block.text)) content.push({ type: 'text', text: block.text })
        break
      case 'thinking':
        if (block.signature && block.redacted === true) {
          content.push({ type: 'redacted_thinking', data: block.signature })
        } else if (block.signature) {
          content.push({ type: 'thinking', thinking: block.thinking, signature: block.signature })
        }
        break
      case 'tool_call': {
        const field = `messages[${index}].tool_calls[${toolCalls++}].function.arguments`
        const input = argumentsObject(block, field, 'Anthropic')
        content.push({
          type: 'tool_use',
          id: toolIds.call(block.id, index),
          name: block.name,
          input,
        })
        break
      }
      case 'tool_result': {
        const result: Record<string, unknown> = {
          type: 'tool_result',
          tool_use_id: toolIds.result(block.toolCallId),
          // Anthropic answers 400 to a failed result with nothing in it
          // ("content cannot be empty if `is_error` is true"), which OpenAI
          // and Gemini take: refused, an agent's history of a tool that
          // failed silently could never be sent to Anthropic again, nor fall
          // back to it. `is_error` says it failed; the placeholder only
          // fills the field, and says no more than the empty text did.
          content:
            block.isError && isBlank(block.content) ? EMPTY_TOOL_ERROR_CONTENT : block.content,
        }
        if (block.isError) result['is_error'] = true
        content.push(result)
        break
      }
    }
  }
  return content
}
