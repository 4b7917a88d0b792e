import { InvalidChatRequestError } from '../../errors/InvalidChatRequestError.js'
import type { ChatMessage, ChatRequest, ContentBlock } from '../../types.js'
import { blocksOf } from '../blocks.js'
import type { BuiltRequest } from '../Dialect.js'
import { isBlank } from '../isBlank.js'
import { refuseEmptyLastTurn } from '../refuseEmptyLastTurn.js'
import { refuseStreamOptions } from '../refuseStreamOptions.js'
import { refuseStrictTools } from '../refuseStrictTools.js'
import { requestToolSettings } from '../requestToolSettings.js'
import { schemaWithDescription } from '../schemaWithDescription.js'
import { argumentsObject } from '../toolArguments.js'
import { toolChoiceName } from '../toolChoiceName.js'
import { refuseGeminiFunctionNames } from './functionName.js'
import { geminiVersion } from './geminiVersion.js'
import { applyGeminiLogprobs } from './logprobs.js'
import { geminiModelPath } from './modelPath.js'
import { refuseGeminiJsonWithTools } from './refuseGeminiJsonWithTools.js'
import { refuseGeminiPenalties } from './refuseGeminiPenalties.js'
import { refuseModelThinking } from './refuseModelThinking.js'
import { responsesInCallOrder } from './responsesInCallOrder.js'
import { geminiThinkingConfig } from './thinkingConfig.js'

type Role = 'user' | 'model'

/**
 * Normalised request → `generateContent` (or `streamGenerateContent?alt=sse`)
 * body. System text becomes `systemInstruction`; a tool result becomes a
 * `functionResponse`, which Gemini matches by function *name*, so the name is
 * looked up from the nearest call with the same id before it in the history
 * (ids made by older versions for calls without one repeat across turns). A signed
 * thinking block hands its signature to the next part as `thoughtSignature`
 * (Gemini signs the part that follows the thought, not the thought). A
 * message `name` has no equivalent and throws `InvalidChatRequestError`; so
 * do tool-call arguments that are not a JSON object (`functionCall.args` is one),
 * an empty last user message, which dropped would leave the model's turn
 * last (`refuseEmptyLastTurn`), a tool name Gemini refuses
 * (`refuseGeminiFunctionNames`), and a `reasoning_effort` the model has
 * no thinking for — `none` to Gemini 2.5 Pro (`refuseModelThinking`) — and a penalty to Gemini 2.5 and later, which
 * take none (`refuseGeminiPenalties`), and a JSON `response_format` beside
 * tools to Gemini before 3, which cannot do both (`refuseGeminiJsonWithTools`).
 */
export function buildGeminiRequest(request: ChatRequest, model: string): BuiltRequest {
  // The calls made before each message, the latest per id: a tool result
  // answers the nearest call with its id before it.
  const names = new Map<string, string>()
  const system: string[] = []
  const contents: { role: Role; parts: Record<string, unknown>[] }[] = []
  // The last message anything was sent of (see refuseEmptyLastTurn).
  let lastSent = -1
  // Every call's name over the whole history, for a result placed before its
  // call: built once, at the first such result. Built again for each, 20,000
  // results before their call (a 1 MB body) cost 22 s.
  let everyName: Map<string, string> | undefined
  const anyCallNames = () => {
    everyName ??= toolNames(request.messages)
    return everyName
  }
  for (let i = 0; i < request.messages.length; i++) {
    const message = request.messages[i] as ChatMessage
    if (message.name !== undefined) {
      throw new InvalidChatRequestError(
        `messages[${i}].name`,
        'Gemini has no equivalent of message names',
      )
    }
    if (message.role === 'system') {
      // Gemini answers 400 "Unable to submit request because it has an empty
      // text parameter" to an empty text part, the system instruction's too
      // (an empty system prompt, as chat UIs send one): blank system text,
      // which says nothing, is left out, as it is for Anthropic.
      for (const b of blocksOf(message))
        if (b.type === 'text' && !isBlank(b.text)) system.push(b.text)
      continue
    }
    const role: Role = message.role === 'assistant' ? 'model' : 'user'
    const blocks = blocksOf(message)
    const parts = toParts(blocks, names, anyCallNames, i)
    for (const b of blocks) if (b.type === 'tool_call') names.set(b.id, b.name)
    if (parts.length === 0) continue
    lastSent = i
    const last = contents.at(-1)
    // One at a time: spread as arguments, a message of 130,000 text parts
    // (3.5 MB) after one of the same role overflowed the stack.
    if (last?.role === role) for (const part of parts) last.parts.push(part)
    else contents.push({ role, parts })
  }
  if (contents.length === 0) {
    // generateContent requires `contents` with at least one part
    // (https://ai.google.dev/api/generate-content#request-body: "contents[]
    // Required"); system text alone is not a conversation.
    throw new InvalidChatRequestError(
      'messages',
      'Gemini needs at least one user or assistant message with content besides system messages',
    )
  }
  refuseEmptyLastTurn(request.messages, lastSent, 'Gemini')
  responsesInCallOrder(contents)
  if (requiresSignedCalls(model)) signUnsignedCalls(contents)
  const generationConfig: Record<string, unknown> = { maxOutputTokens: request.maxTokens }
  if (request.temperature !== undefined) generationConfig['temperature'] = request.temperature
  if (request.topP !== undefined) generationConfig['topP'] = request.topP
  if (request.stop !== undefined && request.stop.length > 0) {
    // generationConfig.stopSequences: "up to 5"
    // (https://ai.google.dev/api/generate-content#generationconfig); more is its 400.
    if (request.stop.length > 5) {
      throw new InvalidChatRequestError(
        'stop',
        `Gemini takes at most 5 stop sequences, got ${request.stop.length}`,
      )
    }
    generationConfig['stopSequences'] = request.stop
  }
  const body: Record<string, unknown> = { contents, generationConfig }
  if (system.length > 0) body['systemInstruction'] = { parts: [{ text: system.join('\n\n') }] }
  if (request.tools !== undefined && request.tools.length > 0) {
    refuseStrictTools(request.tools, 'Gemini')
    body['tools'] = [
      {
        functionDeclarations: request.tools.map((t) => {
          // Set field by field: on Node 20 a field after a spread costs ~0.4 µs.
          const declaration: Record<string, unknown> = { name: t.name }
          if (t.description !== undefined) declaration['description'] = t.description
          // `parametersJsonSchema`, not `parameters`: `parameters` is OpenAPI's
          // subset, which answers 400 to JSON Schema as OpenAI clients write it
          // (`additionalProperties`, `$schema`: "Unknown name ... Cannot find
          // field") and to an object without properties ("properties: should be
          // non-empty for OBJECT type", the gateway's default for a tool without
          // parameters). FunctionDeclaration.parametersJsonSchema takes JSON
          // Schema: https://ai.google.dev/api/caching#FunctionDeclaration,
          // googleapis/js-genai src/types.ts `parametersJsonSchema`.
          // Sent as it is, `$schema` included (openai-node's `zodFunction`
          // writes draft-07's, zod 4's `z.toJSONSchema` 2020-12's): the JSON
          // Schema fields are free JSON values (`value (Value format)`), not
          // the `Schema` message whose unknown fields are refused, and Google
          // documents that "the full JSON Schema may be sent", keywords
          // outside the supported list not enforced (GenerationConfig
          // `responseJsonSchema`, ai.google.dev/api/generate-content).
          declaration['parametersJsonSchema'] = t.parameters
          return declaration
        }),
      },
    ]
  }
  const extra = requestToolSettings(request)
  if (extra !== undefined) applyExtra(extra, body, generationConfig, model)
  // After every other check: a value only Gemini refuses (`provider_value`)
  // is skipped by a gateway checking a fallback list, and thrown first it
  // hid a refusal of the request itself (a seed too wide) from that check.
  if (request.tools !== undefined) refuseGeminiFunctionNames(request.tools)
  refuseModelThinking(model, generationConfig)
  refuseGeminiPenalties(model, generationConfig)
  refuseGeminiJsonWithTools(model, body)
  const path = request.stream
    ? `${geminiModelPath(model)}:streamGenerateContent?alt=sse`
    : `${geminiModelPath(model)}:generateContent`
  return { path, body }
}

/**
 * Gemini 3 answers 400 ("Function call is missing a thought_signature") to
 * a history whose model turn has a function call without the signature it
 * came with; an OpenAI client has no field to send one back in. For a call
 * that has none (sent from a client, or from another model after a fallback)
 * Google documents a sentinel signature that skips the check
 * (https://ai.google.dev/gemini-api/docs/thought-signatures; applied the same
 * way by vercel/ai #15560 and strands-agents/sdk-python #1298). Only the first
 * function call of a model turn carries a signature (parallel calls share it).
 * Gemini 2.x takes calls without one, so they go as they are.
 */
const SKIP_THOUGHT_SIGNATURE = 'skip_thought_signature_validator'

function requiresSignedCalls(model: string): boolean {
  return (geminiVersion(model)?.major ?? 0) >= 3
}

function signUnsignedCalls(contents: readonly { role: Role; parts: Record<string, unknown>[] }[]) {
  for (const content of contents) {
    if (content.role !== 'model') continue
    const call = content.parts.find((part) => part['functionCall'] !== undefined)
    if (call !== undefined && call['thoughtSignature'] === undefined) {
      call['thoughtSignature'] = SKIP_THOUGHT_SIGNATURE
    }
  }
}

/** Chat Completions names → `generationConfig` names, for fields with the same meaning. */
const GENERATION_FIELDS: Readonly<Record<string, string>> = {
  seed: 'seed',
  frequency_penalty: 'frequencyPenalty',
  presence_penalty: 'presencePenalty',
}

/**
 * The client's other Chat Completions fields (tool settings that mean
 * nothing without tools already left out, see `requestToolSettings`):
 * translated where Gemini has an equivalent (`response_format` →
 * `responseMimeType` + `responseJsonSchema`, which takes JSON Schema as OpenAI clients write it — `responseSchema` is
 * OpenAPI's subset and refuses `additionalProperties`; `tool_choice` →
 * `toolConfig`; `seed`, penalties; `reasoning_effort` → `thinkingConfig`,
 * the thoughts included, see `geminiThinkingConfig`; `logprobs`,
 * `top_logprobs` → `responseLogprobs`, `logprobs`: `applyGeminiLogprobs`),
 * kept when they ask for Gemini's default (`n: 1`, `parallel_tool_calls:
 * true`, text `modalities`, `store: false`, `service_tier: 'auto'`,
 * `verbosity: 'medium'`, `stream_options` without obfuscation); any other
 * throws naming it, so none is dropped silently.
 */
function applyExtra(
  extra: Record<string, unknown>,
  body: Record<string, unknown>,
  generationConfig: Record<string, unknown>,
  model: string,
): void {
  for (const [field, value] of Object.entries(extra)) {
    if (value === undefined || value === null) continue
    const renamed = GENERATION_FIELDS[field]
    if (renamed !== undefined && Object.hasOwn(GENERATION_FIELDS, field)) {
      // A penalty of 0 is none, OpenAI's default, which clients (LangChain's
      // ChatOpenAI among them) send on every request. Sent, it made Gemini
      // 2.5 answer 400 "Penalty is not enabled for models/gemini-2.5-flash"
      // (vercel/ai #17102), a bad request that never falls back: so 0 asks
      // for Gemini's default, as it does for Anthropic, and is not sent.
      // Another is refused to those models, last (`refuseGeminiPenalties`).
      if (value === 0 && field !== 'seed') continue
      if (field === 'seed') refuseWideSeed(value)
      generationConfig[renamed] = value
    } else if (field === 'response_format') {
      Object.assign(generationConfig, geminiResponseFormat(value))
    } else if (field === 'tool_choice') {
      body['toolConfig'] = { functionCallingConfig: geminiToolChoice(value) }
    } else if (field === 'stream_options') {
      refuseStreamOptions(value, 'Gemini')
    } else if (field === 'reasoning_effort') {
      generationConfig['thinkingConfig'] = geminiThinkingConfig(value, model)
    } else if (field === 'logprobs' || field === 'top_logprobs') {
      applyGeminiLogprobs(extra, generationConfig)
    } else if (!isDefault(field, value) && !noCallsAnyway(field, value, extra)) {
      throw new InvalidChatRequestError(field, 'Gemini has no equivalent')
    }
  }
}

/**
 * `generationConfig.seed` is a protobuf `int32`: Gemini answers a larger one
 * 400 "Invalid value at 'generation_config.seed' (TYPE_INT32), 3898845386",
 * a bad request no fallback follows, where OpenAI takes any 64-bit seed (a
 * hash, a timestamp). Refused naming it, with nothing sent; folded into
 * range, two seeds would give one answer and the caller could not tell.
 */
function refuseWideSeed(value: unknown): void {
  if (typeof value !== 'number' || (value >= INT32_MIN && value <= INT32_MAX)) return
  throw new InvalidChatRequestError(
    'seed',
    `Gemini takes a seed from ${INT32_MIN} to ${INT32_MAX} (a 32-bit integer), got ${value}`,
  )
}

const INT32_MIN = -(2 ** 31)
const INT32_MAX = 2 ** 31 - 1

function geminiResponseFormat(value: unknown): Record<string, unknown> {
  const format = value as { type?: unknown; json_schema?: JsonSchemaFormat | null }
  if (format.type === 'text') return {}
  if (format.type === 'json_object') return { responseMimeType: 'application/json' }
  if (format.type === 'json_schema') {
    const config: Record<string, unknown> = { responseMimeType: 'application/json' }
    const schema = responseJsonSchema(format.json_schema ?? {})
    if (schema !== undefined) config['responseJsonSchema'] = schema
    return config
  }
  throw new InvalidChatRequestError('response_format', 'Gemini has no equivalent of this type')
}

interface JsonSchemaFormat {
  description?: unknown
  schema?: unknown
}

/**
 * `json_schema.schema` as it is (`null` is not set: JSON without a schema),
 * `$schema` included: "While the full JSON Schema may be sent, not all
 * features are supported. Specifically, only the following properties are
 * supported: `$id`, `$defs`, `$ref`, … `required`" (GenerationConfig
 * `responseJsonSchema`, ai.google.dev/api/generate-content) — an unlisted
 * keyword is sent and not enforced, not refused; only `responseSchema` (a
 * `Schema` message, never sent here) answers "Unknown name \"$schema\"". With
 * `json_schema.description` as the schema's own top-level `description` —
 * where JSON Schema, and so Gemini, reads what a schema is for. A
 * description with no schema to carry it, or beside a different one of the
 * schema's own, throws instead of being dropped (`schemaWithDescription`,
 * as for Anthropic).
 */
function responseJsonSchema(format: JsonSchemaFormat): unknown {
  const { schema, description } = format
  return schemaWithDescription(schema ?? undefined, description, 'Gemini')
}

function geminiToolChoice(value: unknown): Record<string, unknown> {
  if (value === 'auto') return { mode: 'AUTO' }
  if (value === 'required') return { mode: 'ANY' }
  if (value === 'none') return { mode: 'NONE' }
  return { mode: 'ANY', allowedFunctionNames: [toolChoiceName(value, 'Gemini')] }
}

/**
 * `parallel_tool_calls: false` beside `tool_choice: 'none'`: no call can be
 * made, so none in parallel either (agent frameworks set `false` on every
 * request and `none` on a final turn; Anthropic's translation drops it
 * there). Refused, a turn that asked for no tools failed.
 */
function noCallsAnyway(field: string, value: unknown, extra: Record<string, unknown>): boolean {
  return field === 'parallel_tool_calls' && value === false && extra['tool_choice'] === 'none'
}

/** A value that asks for what Gemini does anyway. */
function isDefault(field: string, value: unknown): boolean {
  if (field === 'n') return value === 1
  if (field === 'modalities') return Array.isArray(value) && value.every((m) => m === 'text')
  if (field === 'parallel_tool_calls') return value === true
  // OpenAI's default, which clients send explicitly: nothing stored.
  if (field === 'store') return value === false
  // More of OpenAI's defaults that clients and configs fill in: refused, they
  // failed a request that asks for nothing an absent field does not.
  // `service_tier: 'auto'` is OpenAI's "when not set" (the tier the project is
  // configured for): the request goes as one without it, and CostBudget holds
  // `auto` as it holds no tier (the dearest the price lists). `verbosity:
  // 'medium'` is GPT-5's default length. Not `prompt_cache_retention`: no
  // value of it is a default to drop — OpenAI's is `24h` for most
  // organisations, and `in_memory` asks that the cache stay in memory (never
  // offloaded to storage), which Gemini's implicit caching does not promise.
  if (field === 'service_tier') return value === 'auto'
  if (field === 'verbosity') return value === 'medium'
  return false
}

/** Every call's name by id, over the whole history (the last call of an id wins). */
function toolNames(messages: readonly ChatMessage[]): Map<string, string> {
  const names = new Map<string, string>()
  for (const m of messages) {
    for (const b of blocksOf(m)) if (b.type === 'tool_call') names.set(b.id, b.name)
  }
  return names
}

/** A message's blocks → Gemini parts; `index` is the message's, for naming a tool call's arguments. */
function toParts(
  blocks: readonly ContentBlock[],
  names: ReadonlyMap<string, string>,
  anyCallNames: () => ReadonlyMap<string, string>,
  index: number,
) {
  const parts: Record<string, unknown>[] = []
  let toolCalls = 0
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
      case 'tool_call': {
        const field = `messages[${index}].tool_calls[${toolCalls++}].function.arguments`
        const args = argumentsObject(block, field, 'Gemini')
        signed({ functionCall: { id: block.id, name: block.name, args } })
        break
      }
      case 'tool_result': {
        // Gemini matches a functionResponse to its call by function name
        // (https://ai.google.dev/api/caching#FunctionResponse: `name` required).
        // A result whose call is not in the history has no name to send: the
        // id in its place would be a call of a function that does not exist.
        // A result placed before its call (an unusual history): any call with its id.
        const name = names.get(block.toolCallId) ?? anyCallNames().get(block.toolCallId)
        if (name === undefined) {
          throw new InvalidChatRequestError(
            `messages[${index}].tool_call_id`,
            'Gemini needs the function name of a tool result, and no assistant tool call in messages has this id',
          )
        }
        parts.push({
          functionResponse: {
            id: block.toolCallId,
            name,
            response: block.isError ? { error: block.content } : { result: block.content },
          },
        })
        break
      }
    }
  }
  return parts
}
