import type { z } from 'zod'
import type { ChatRequest } from '../llm.js'
import { quoted, toolLoopTurns } from '../llm.js'
import { type ChatRequestBody, chatRequestSchema, KNOWN_FIELDS } from './chatRequestSchema.js'
import { GatewayRequestError } from './GatewayRequestError.js'
import { EMPTY_BODY, NOT_JSON_TYPED } from './jsonBody.js'
import { MAX_JSON_DEPTH, nestsDeeperThan } from './jsonDepth.js'

type Message = ChatRequest['messages'][number]
type Block = Exclude<Message['content'], string>[number]

/**
 * Why a body that is not an object is refused. Unread (not `application/json`,
 * or bytes or text an app's own raw or text parser left for another
 * Content-Type): the Content-Type. Read as JSON of another shape (`[]`; a
 * number an app's `express.json({ strict: false })` left): that shape —
 * naming the Content-Type there sent a client whose header was right to look
 * at it.
 */
function notAnObject(body: unknown): string {
  if (body === undefined || typeof body === 'string' || isBytes(body)) {
    return 'expected a JSON object (Content-Type: application/json)'
  }
  const shape = Array.isArray(body)
    ? 'an array'
    : body === null
      ? 'null'
      : typeof body === 'number'
        ? 'a number'
        : typeof body === 'boolean'
          ? 'a boolean'
          : typeof body
  return `expected a JSON object with model and messages, got ${shape}`
}

/**
 * The Buffer an app's `express.raw()` mounted for every type left for a body
 * that is not JSON (`application/x-www-form-urlencoded`: curl's `-d`). An
 * object to `typeof`, it was read as a body whose `model` is missing.
 */
function isBytes(body: unknown): boolean {
  return ArrayBuffer.isView(body)
}

/**
 * Fields the gateway turns into `ChatRequest`'s own; every other field set
 * travels in `extra`. `stream_options` does too: the gateway reads
 * `include_usage` for its own answer, and the dialect forwards or refuses the
 * rest (`include_obfuscation`).
 */
const CORE_FIELDS = new Set([
  'model',
  'messages',
  'max_tokens',
  'max_completion_tokens',
  'temperature',
  'top_p',
  'stop',
  'stream',
  'tools',
])

export interface ParsedChatRequest {
  /** The model name the client asked for (before aliases and routes). */
  model: string
  request: ChatRequest
  /** `stream_options.include_usage`: the client wants usage in a last chunk. */
  includeUsage: boolean
}

/**
 * A Chat Completions body → the model asked for and llm's `ChatRequest`.
 * Fields beyond the core ones (`response_format`, `tool_choice`, `seed`, …)
 * and unknown fields go to `request.extra` as sent, for the dialect to
 * forward, translate or refuse. Throws a 400 `GatewayRequestError` naming the
 * first bad field (`messages[2].content: …`).
 */
export function parseChatRequest(
  body: unknown,
  options: { defaultMaxTokens: number },
): ParsedChatRequest {
  if (body === EMPTY_BODY) {
    throw new GatewayRequestError({
      status: 400,
      errorCode: 'invalid_request',
      param: 'body',
      message:
        'the body is empty: send a JSON object with model and messages (Content-Type: application/json)',
    })
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body) || isBytes(body)) {
    throw invalid('body', notAnObject(body))
  }
  const parsed = chatRequestSchema.safeParse(body)
  if (!parsed.success) {
    // Form fields an app's parser read (jsonBody's NOT_JSON_TYPED): the Content-Type is what is wrong.
    if (NOT_JSON_TYPED.has(body)) throw invalid('body', notAnObject(undefined))
    const { path, message } = firstProblem(parsed.error.issues)
    throw invalid(path, message)
  }
  const valid = parsed.data
  if (valid.stream_options != null && valid.stream !== true) {
    throw invalid('stream_options', 'only with stream: true')
  }
  // Two different caps: one of them would be dropped. OpenAI refuses both
  // set ("Setting 'max_tokens' and 'max_completion_tokens' at the same time
  // is not supported", param max_tokens); the same value twice asks for one cap.
  if (
    valid.max_tokens != null &&
    valid.max_completion_tokens != null &&
    valid.max_tokens !== valid.max_completion_tokens
  ) {
    throw invalid(
      'max_tokens',
      `${valid.max_tokens} beside max_completion_tokens ${valid.max_completion_tokens}: set one of them`,
    )
  }
  refuseCustomToolChoice(valid.tool_choice)
  // The turns DeepSeek is sent their thinking on (llm's one rule).
  const inToolLoop = toolLoopTurns(valid.messages)
  const request: ChatRequest = {
    messages: valid.messages.map((m, i) => toMessage(m, `messages[${i}]`, inToolLoop[i] === true)),
    maxTokens: valid.max_completion_tokens ?? valid.max_tokens ?? options.defaultMaxTokens,
  }
  if (valid.temperature != null) request.temperature = valid.temperature
  if (valid.top_p != null) request.topP = valid.top_p
  if (valid.stop != null) request.stop = typeof valid.stop === 'string' ? [valid.stop] : valid.stop
  if (valid.tools != null) {
    request.tools = valid.tools.map(({ function: fn }) => ({
      name: fn.name,
      parameters: fn.parameters ?? noParameters(fn.strict === true),
      ...(fn.description == null ? {} : { description: fn.description }),
      ...(fn.strict == null ? {} : { strict: fn.strict }),
    }))
  }
  if (valid.stream === true) request.stream = true
  const extra = extraFields(body as Record<string, unknown>, valid)
  if (Object.keys(extra).length > 0) request.extra = extra
  return {
    model: valid.model,
    request,
    includeUsage: valid.stream_options?.include_usage === true,
  }
}

/**
 * The schema of a tool sent without `parameters` (OpenAI: "an empty
 * parameter list"), which llm's tools always carry. Under `strict: true` it
 * says no argument is allowed, as strict mode requires of every object:
 * OpenAI answered the bare `{type: "object", properties: {}}` with 400
 * "'additionalProperties' is required to be supplied and to be false", a
 * schema the client never wrote. Strict tools go to OpenAI-compatible
 * dialects only (Anthropic and Gemini refuse them).
 */
function noParameters(strict: boolean): Record<string, unknown> {
  return strict
    ? { type: 'object', properties: {}, additionalProperties: false }
    : { type: 'object', properties: {} }
}

/**
 * Every field set beyond the core ones: known ones as validated, unknown
 * ones as sent (after the depth cap). Own keys only, written with
 * defineProperty, so a key named `__proto__` stays a field.
 */
function extraFields(raw: Record<string, unknown>, valid: ChatRequestBody) {
  const extra: Record<string, unknown> = {}
  for (const key of Object.keys(raw)) {
    if (CORE_FIELDS.has(key)) continue
    const value = KNOWN_FIELDS.has(key) ? (valid as Record<string, unknown>)[key] : raw[key]
    if (value === null || value === undefined) continue
    if (!KNOWN_FIELDS.has(key) && nestsDeeperThan(value, MAX_JSON_DEPTH)) {
      throw invalid(fieldPath([key]), `nested deeper than ${MAX_JSON_DEPTH} levels`)
    }
    Object.defineProperty(extra, key, {
      value,
      enumerable: true,
      writable: true,
      configurable: true,
    })
  }
  return extra
}

function toMessage(
  m: ChatRequestBody['messages'][number],
  path: string,
  inToolLoop: boolean,
): Message {
  if (m.role === 'tool') {
    return {
      role: 'tool',
      content: [
        { type: 'tool_result', toolCallId: m.tool_call_id, content: joinedText(m.content) },
      ],
    }
  }
  if (m.role === 'assistant') {
    // Refusal parts are the `refusal` field in another shape: after the text,
    // as a refused answer's message has them.
    const parts = typeof m.content === 'string' || m.content == null ? [] : m.content
    const texts = textBlocks(
      typeof m.content === 'string'
        ? m.content
        : parts.flatMap((p) => (p.type === 'text' ? [p] : [])),
    )
    // Given both ways (a history built by hand), the same refusal once; two
    // different ones both, a line apart.
    const fromParts = parts.flatMap((p) => (p.type === 'refusal' ? [p.refusal] : [])).join('')
    const field = m.refusal ?? ''
    const refusal =
      fromParts === '' || field === '' || field === fromParts
        ? fromParts || field
        : `${fromParts}\n${field}`
    // Its thinking (`reasoning_content`, the gateway's own answer's), on a
    // tool loop's turn, as an unsigned thinking block, first, as the model
    // wrote it: llm sends it back where a provider wants it (DeepSeek's
    // thinking mode, there), and Anthropic and Gemini, which take only
    // signed thinking, leave it out. Dropped, DeepSeek's tool loops got a
    // 400, and then (llm sending `""` for a turn that had none) an empty
    // reasoning in place of the model's own. On any other turn it goes to
    // no provider, and is dropped: kept, the prompt estimate (routing, the
    // cost budget, TPM) counted text that is never sent.
    const blocks: Block[] =
      inToolLoop && typeof m.reasoning_content === 'string' && m.reasoning_content !== ''
        ? [{ type: 'thinking', thinking: m.reasoning_content }, ...texts]
        : texts
    // A refused answer pushed back as it came (`content: null`, its text in
    // `refusal`): the model's turn, marked as the refusal it was.
    if (refusal !== '') blocks.push({ type: 'text', text: refusal, refusal: true })
    m.tool_calls?.forEach((call, i) => {
      const written = call.function.arguments
      const args = parseArguments(written)
      if (nestsDeeperThan(args, MAX_JSON_DEPTH)) {
        throw invalid(
          `${path}.tool_calls[${i}].function.arguments`,
          `nested deeper than ${MAX_JSON_DEPTH} levels`,
        )
      }
      // The text goes too: OpenAI-compatible providers get it byte for byte.
      blocks.push({
        type: 'tool_call',
        id: call.id,
        name: call.function.name,
        arguments: args,
        rawArguments: written,
      })
    })
    const assistant: Message = { role: 'assistant', content: blocks }
    if (m.name != null) assistant.name = m.name
    return assistant
  }
  const message: Message = {
    role: m.role === 'developer' ? 'system' : m.role,
    content: typeof m.content === 'string' ? m.content : partsContent(m.content),
  }
  if (m.name != null) message.name = m.name
  return message
}

/**
 * Content parts kept apart, one text block each (empty ones left out: they
 * say nothing, and Anthropic and Gemini refuse an empty block or part).
 * Anthropic takes them as text blocks, Gemini as parts; joined with nothing,
 * `[{text: '<reminder>'}, {text: 'What is 2+2?'}]` reached them as one
 * glued text. (llm's OpenAI-compatible builder makes one string of them.)
 */
function textBlocks(content: string | Array<{ text: string }>): Block[] {
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }]
  const blocks: Block[] = []
  for (const part of content) if (part.text !== '') blocks.push({ type: 'text', text: part.text })
  return blocks
}

/** Two parts or more as blocks; one as its text, as a string content is (what every request was). */
function partsContent(parts: Array<{ text: string }>): string | Block[] {
  const blocks = textBlocks(parts)
  return blocks.length > 1 ? blocks : ((blocks[0] as { text: string } | undefined)?.text ?? '')
}

/**
 * Where one string is all a dialect takes (a tool result: llm's
 * `ToolResultBlock.content`), parts go a line apart — as vLLM and
 * TensorRT-LLM flatten the text parts of one message — not glued into one
 * word (`"sunny"`, `"21 °C"` → `"sunny21 °C"`).
 */
function joinedText(content: string | Array<{ text: string }> | null | undefined): string {
  if (content == null) return ''
  if (typeof content === 'string') return content
  return content.length === 1 ? (content[0] as { text: string }).text : joinText(content)
}

function joinText(parts: Array<{ text: string }>): string {
  let text = ''
  for (const part of parts) {
    if (part.text === '') continue
    text = text === '' ? part.text : `${text}\n${part.text}`
  }
  return text
}

/**
 * As the model sent them: JSON when it is JSON, else the text itself; empty
 * text is `{}` (a call without arguments, as some providers stream it).
 */
function parseArguments(text: string): unknown {
  if (text.trim() === '') return {}
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

/**
 * Custom tools are refused (`tools[0].type`), so a choice naming one points
 * at a tool the request cannot carry: it was forwarded to OpenAI-compatible
 * providers as an unknown kind of choice. Refused the same way, as is a
 * custom tool in an `allowed_tools` list.
 */
function refuseCustomToolChoice(choice: ChatRequestBody['tool_choice']): void {
  if (typeof choice !== 'object' || choice === null) return
  if (choice.type === 'custom') throw invalid('tool_choice.type', CUSTOM_TOOLS)
  if (choice.type !== 'allowed_tools') return
  const allowed = (choice as { allowed_tools?: unknown }).allowed_tools
  const tools = (allowed as { tools?: unknown } | null | undefined)?.tools
  if (!Array.isArray(tools)) return
  tools.forEach((tool: unknown, i) => {
    if ((tool as { type?: unknown } | null)?.type === 'custom') {
      throw invalid(`tool_choice.allowed_tools.tools[${i}].type`, CUSTOM_TOOLS)
    }
  })
}

const CUSTOM_TOOLS = 'only function tools are supported'

function invalid(field: string, problem: string): GatewayRequestError {
  return new GatewayRequestError({
    status: 400,
    errorCode: 'invalid_request',
    param: field,
    message: `${field}: ${problem}`,
  })
}

type Issue = z.core.$ZodIssue

/**
 * The problem to report. A union that failed in every branch reports the
 * branch that got furthest (`messages[0].content[1].type: only text parts…`
 * rather than "invalid input" at `messages[0]`), unless none got past the
 * value itself.
 */
function firstProblem(
  issues: readonly Issue[],
  prefix: readonly PropertyKey[] = [],
): { path: string; message: string } {
  const issue = issues[0] as Issue
  const path = [...prefix, ...issue.path]
  if (issue.code === 'invalid_union' && issue.errors.length > 0) {
    const deepest = issue.errors
      .filter((branch) => branch.length > 0)
      // Not `Math.max(...paths)`: spread as arguments, a branch of 400,000
      // issues overflowed the stack (a 500 for a bad body).
      .map((branch) => ({ branch, depth: deepestPath(branch) }))
      .sort((a, b) => b.depth - a.depth)[0]
    if (deepest !== undefined && deepest.depth > 0) {
      const sorted = [...deepest.branch].sort((a, b) => b.path.length - a.path.length)
      return firstProblem(sorted, path)
    }
  }
  if (issue.code === 'unrecognized_keys') {
    return { path: fieldPath([...path, issue.keys[0] as string]), message: 'unknown field' }
  }
  return { path: fieldPath(path), message: issue.message }
}

function deepestPath(issues: readonly Issue[]): number {
  let depth = 0
  for (const issue of issues) depth = Math.max(depth, issue.path.length)
  return depth
}

/** The longest name of a field a refusal shows (`param` and `message`); a longer one is cut. */
const MAX_NAME_CHARS = 64

/** `['messages', 2, 'content']` → `messages[2].content`. */
function fieldPath(path: readonly PropertyKey[]): string {
  let out = ''
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`
    // A plain name longer than that is quoted and cut too: 5,000 × 'k' was
    // echoed whole, twice (a 10 KB 400 for a 5 KB key).
    else if (String(key).length <= MAX_NAME_CHARS && /^[A-Za-z_$][\w$]*$/.test(String(key)))
      out += out === '' ? String(key) : `.${String(key)}`
    // Escaped as a model name is (`quoted`): a name is an id, and an invisible
    // character in it (a zero-width joiner) is why it is unknown.
    else out += `[${quoted(String(key), MAX_NAME_CHARS)}]`
  }
  return out === '' ? 'body' : out
}
