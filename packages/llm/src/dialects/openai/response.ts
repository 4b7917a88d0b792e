import { malformedReply } from '../../errors/ProviderReplyError.js'
import type {
  Annotation,
  ChatResponse,
  ContentBlock,
  FinishReason,
  Logprobs,
  Usage,
} from '../../types.js'
import {
  anyCount,
  countOf,
  MAX_TOKEN_COUNT,
  mapFinish,
  parseArguments,
  refusalOf,
  textOf,
  usageOf,
  withUsageDetails,
} from '../blocks.js'
import { type ResponseMeta, readRequestId } from '../Dialect.js'
import { EMPTY_ARGUMENTS, isEmptyArguments } from '../emptyToolArguments.js'
import { GeneratedCallIds } from '../GeneratedCallIds.js'
import { markNoAnswer } from '../noAnswer.js'
import { asArray, get, getRecord, getString, parseAnswerJson } from '../safeJson.js'
import { markUnfinished } from '../unfinishedCall.js'
import { argumentsSent, argumentsWritten } from './argumentsSent.js'
import { reasoningThinking } from './reasoningText.js'

export const OPENAI_FINISH: Readonly<Record<string, FinishReason>> = {
  stop: 'stop',
  length: 'length',
  tool_calls: 'tool_calls',
  function_call: 'tool_calls',
  content_filter: 'content_filter',
  // DeepSeek: generation cut short because the provider ran out of capacity.
  insufficient_system_resource: 'error',
  // Mistral's "generation failed", Zhipu's (z.ai) "model inference
  // exception": cut short by the provider too. Read as `unknown`, such an
  // answer came back as a success, never retried nor handed to a fallback.
  error: 'error',
  network_error: 'error',
  // vLLM's and SGLang's `abort`: the engine dropped the request mid-generation
  // (preempted, out of KV cache, its own timeout). Read as `unknown`, the cut
  // text reached the gateway's client as a finished `stop` answer.
  abort: 'error',
  // Zhipu (z.ai): the content was stopped by its safety review.
  sensitive: 'content_filter',
  // The context window filled (`OPENAI_WINDOW_FULL`): z.ai's (Zhipu GLM),
  // and Mistral's own word for it.
  model_context_window_exceeded: 'length',
  model_length: 'length',
}

/**
 * Finish reasons of an answer stopped because the context window is full,
 * not the `max_tokens` cap: z.ai's OpenAI-compatible API names it as
 * Anthropic's stop reason (`model_context_window_exceeded`), Mistral's
 * `model_length`. Still `length`, but kept as `providerFinishReason` so the
 * output-limit recovery can tell it apart — a raised cap or a "continue"
 * turn cannot get past a full window. Unknown, they were `unknown`: the cut
 * answer came back as a success.
 */
export const OPENAI_WINDOW_FULL: ReadonlySet<string> = new Set([
  'model_context_window_exceeded',
  'model_length',
])

/**
 * `ChatResponse.providerFinishReason` for a `finish_reason` mapped to
 * `finish`: the reason as sent when it is an `error` (which one it was) or
 * a full context window; undefined otherwise.
 */
export function openAIProviderFinishReason(
  finish: FinishReason,
  reason: unknown,
): string | undefined {
  if (finish === 'error') return String(reason)
  return typeof reason === 'string' && OPENAI_WINDOW_FULL.has(reason) ? reason : undefined
}

/**
 * `chat.completion` body → normalised response. `reasoning_content`
 * (DeepSeek, Qwen), or `reasoning` (vLLM, OpenRouter: `reasoningThinking`,
 * which marks it `field: 'reasoning'`), becomes a thinking block without a
 * signature. A body
 * without choices is not an empty answer: it throws `ProviderReplyError`.
 */
export function parseOpenAIResponse(
  body: unknown,
  meta: ResponseMeta = {},
  provider = 'openai',
  requestIdHeader: string | readonly string[] = 'x-request-id',
): ChatResponse {
  const json = typeof body === 'string' ? parseAnswerJson(body) : body
  const choice = asArray(get(json, 'choices'))[0]
  const message = getRecord(choice, 'message')
  if (message === undefined) throw malformedReply('chat completion (no choices[0].message)')
  const content: ContentBlock[] = []
  const reasoning = reasoningThinking(message)
  if (reasoning) content.push(reasoning)
  const parts = contentParts(get(message, 'content'))
  if (parts.thinking) content.push({ type: 'thinking', thinking: parts.thinking })
  if (parts.text) content.push({ type: 'text', text: parts.text })
  // A refusal (structured outputs) comes as `refusal` with `content: null`:
  // kept as text, marked, so the gateway answers it as `refusal` again and
  // a client parsing the content as JSON never parses the refusal. One
  // given as a content part instead (`contentParts`) is the same refusal;
  // the message's own field wins when both are said.
  const refusal = getString(message, 'refusal') || parts.refusal
  if (refusal) content.push({ type: 'text', text: refusal, refusal: true })
  // Made only for a call that came without an id (see below).
  const ids = new GeneratedCallIds()
  // The body's text, for arguments a server sent as an object (`argumentsSent`).
  const written = argumentsWritten(typeof body === 'string' ? body : meta.text, 'message')
  for (const [index, call] of asArray(get(message, 'tool_calls')).entries()) {
    const fn = getRecord(call, 'function')
    // A call without arguments (no `arguments`, or blank: some
    // OpenAI-compatible servers for a parameterless tool) is `{}`, as the
    // stream gives it and as client code parses it.
    const given = argumentsSent(get(fn, 'arguments'), () => written(index))
    const blank = isEmptyArguments(given)
    const rawArguments = blank ? EMPTY_ARGUMENTS : given
    const block: ContentBlock = {
      type: 'tool_call',
      // A call sent without an id (`""` from Gemini's OpenAI compatibility
      // endpoint, none from LM Studio and others) gets one unique across
      // turns, as the same answer streamed does: kept `""`, two calls shared
      // one id, and their results could not be told apart (the next turn to
      // Gemini's own API named every result after the last call).
      id: getString(call, 'id') || ids.next(),
      name: getString(fn, 'name') ?? '',
      arguments: parseArguments(rawArguments),
      // Kept as sent, for whoever passes the call on as text (the gateway's
      // answer, the next turn's request): the parsed value rounds integers
      // past 2^53.
      rawArguments,
    }
    // No argument text came: the `{}` is ours, and a call cut right after
    // its name reads the same (`markUnfinished`).
    content.push(blank ? markUnfinished(block) : block)
  }
  const requestId = readRequestId(meta.headers, requestIdHeader)
  const refused = refusalOf(content)
  const usage = getRecord(json, 'usage')
  const response: ChatResponse = {
    id: getString(json, 'id') ?? '',
    model: getString(json, 'model') ?? '',
    provider,
    content,
    text: textOf(content),
    finishReason: mapFinish(OPENAI_FINISH, get(choice, 'finish_reason')),
    usage: openAIUsage(usage),
    // No `usage` (some compatible servers, proxies, Ollama variants): its
    // zeros mean "not said", told apart (`ChatResponse.usageReported`).
    ...(openAIUsageReported(usage) ? {} : { usageReported: false as const }),
    ...(refused === undefined ? {} : { refusal: refused }),
    ...(requestId === undefined ? {} : { providerRequestId: requestId }),
  }
  // What an OpenAI client reads besides the message, kept for whoever passes
  // the answer on (the gateway): dropped, `web_search_options` was forwarded
  // and billed but its citations never reached the client.
  const said = openAIProviderFinishReason(response.finishReason, get(choice, 'finish_reason'))
  if (said !== undefined) response.providerFinishReason = said
  const fingerprint = getString(json, 'system_fingerprint')
  if (fingerprint) response.systemFingerprint = fingerprint
  const tier = getString(json, 'service_tier')
  if (tier) response.serviceTier = tier
  const annotations = annotationsOf(get(message, 'annotations'))
  if (annotations.length > 0) response.annotations = annotations
  const logprobs = logprobsOf(get(choice, 'logprobs'))
  if (logprobs !== undefined) response.logprobs = logprobs
  // `null`, absent or `""` (some compatible servers' "none yet") is no
  // reason, as in a stream's chunk.
  const reason = get(choice, 'finish_reason')
  return markNoAnswer(response, reason !== undefined && reason !== null && reason !== '')
}

/**
 * A choice's `logprobs` (`{ content, refusal }`), when it is an object:
 * each list as sent, `null` when absent. `into` joins a stream's pieces.
 */
export function logprobsOf(value: unknown, into?: Logprobs): Logprobs | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return into
  const out = into ?? { content: null, refusal: null }
  for (const key of ['content', 'refusal'] as const) {
    const list = get(value, key)
    if (!Array.isArray(list)) continue
    // Appended in place: a new list of every token so far per chunk made a
    // stream's cost the square of its tokens (40,000 one-token chunks with
    // `logprobs: true` held the event loop 160 s).
    const held = out[key]
    if (held === null) out[key] = [...list]
    else for (const item of list) held.push(item)
  }
  return out
}

/** A message's (or a delta's) `annotations`: the objects among them, as sent. */
export function annotationsOf(value: unknown): Annotation[] {
  const out: Annotation[] = []
  for (const item of asArray(value)) {
    if (typeof item === 'object' && item !== null && !Array.isArray(item)) {
      out.push(item as Annotation)
    }
  }
  return out
}

/**
 * OpenAI's `usage` (`CompletionUsage`) → normalised: with the cached part of
 * the prompt (`prompt_tokens_details.cached_tokens`; DeepSeek's older
 * `prompt_cache_hit_tokens` when that is absent), the part written to the
 * cache (`prompt_tokens_details.cache_write_tokens`), the reasoning part of
 * the completion (`completion_tokens_details.reasoning_tokens`) and its
 * prediction counts (`accepted_prediction_tokens`, `rejected_prediction_tokens`).
 */
export function openAIUsage(usage: Record<string, unknown> | undefined): Usage {
  const prompt = getRecord(usage, 'prompt_tokens_details')
  const cached = get(prompt, 'cached_tokens') ?? get(usage, 'prompt_cache_hit_tokens')
  const details = getRecord(usage, 'completion_tokens_details')
  const out = withUsageDetails(
    usageOf(get(usage, 'prompt_tokens'), get(usage, 'completion_tokens')),
    cached,
    get(details, 'reasoning_tokens'),
  )
  // Reasoning counted apart from `completion_tokens` (xAI's Chat Completions:
  // `total_tokens` = prompt + completion + reasoning; some proxies of
  // Gemini's thoughts too), where OpenAI's `completion_tokens` includes it:
  // told by a total that adds it again, or by more reasoning than
  // completion. Read as OpenAI's, that reasoning was no output at all —
  // charged nothing, `reasoningTokens` above `outputTokens`.
  const reasoning = countOf(get(details, 'reasoning_tokens')) ?? 0
  if (reasoning > 0) {
    const completion = countOf(get(usage, 'completion_tokens')) ?? 0
    const total = countOf(get(usage, 'total_tokens'))
    const promptCount = countOf(get(usage, 'prompt_tokens')) ?? 0
    if (reasoning > completion || total === promptCount + completion + reasoning) {
      out.outputTokens = Math.min(completion + reasoning, MAX_TOKEN_COUNT)
    }
  }
  // Cache writes, a part of `prompt_tokens` apart from `cached_tokens`:
  // GPT-5.6 and later bill them at 1.25× the input price (OpenAI's prompt
  // caching guide; an OpenAI-compatible router passes Claude's writes on
  // here too). Unread, every write was priced as plain input.
  const written = countOf(get(prompt, 'cache_write_tokens'))
  if (written !== undefined) out.cacheCreationInputTokens = written
  // Predicted Outputs (`prediction`, forwarded as sent): how much of the
  // prediction the answer used; the rejected part is billed as output.
  const accepted = countOf(get(details, 'accepted_prediction_tokens'))
  if (accepted !== undefined) out.acceptedPredictionTokens = accepted
  const rejected = countOf(get(details, 'rejected_prediction_tokens'))
  if (rejected !== undefined) out.rejectedPredictionTokens = rejected
  return out
}

/** Whether OpenAI's `usage` had a prompt or completion count (`openAIUsage` reads zeros for neither). */
export function openAIUsageReported(usage: Record<string, unknown> | undefined): boolean {
  return anyCount(get(usage, 'prompt_tokens'), get(usage, 'completion_tokens'))
}

/**
 * A message's (or a delta's) `content`: a string, or — from some
 * OpenAI-compatible servers (Mistral's Magistral models, proxies passing
 * another API's blocks on) — an array of parts: `{ type: 'text', text }`
 * and `{ type: 'thinking', thinking }`, whose `thinking` is a string or
 * itself an array of text parts. Read as a string only, such an answer was
 * an empty success: its text dropped, billed all the same. Parts of a kind
 * are joined with nothing between them, as a stream's pieces are (and as
 * Anthropic's text blocks, or Gemini's parts, are joined into `text`).
 * A `{ type: 'refusal', refusal }` part — OpenAI's own shape for a refusal
 * in a content array (`ChatCompletionContentPartRefusal`; the Responses
 * API's output refusal too) — is the refusal, kept apart: read as no
 * text, a refused answer was an empty success that finished `stop`.
 */
export function contentParts(value: unknown): { text: string; thinking: string; refusal: string } {
  if (typeof value === 'string') return { text: value, thinking: '', refusal: '' }
  let text = ''
  let thinking = ''
  let refusal = ''
  for (const part of asArray(value)) {
    const type = getString(part, 'type')
    if (type === 'text' || type === 'output_text') text += getString(part, 'text') ?? ''
    else if (type === 'thinking') thinking += textOfParts(get(part, 'thinking'))
    else if (type === 'refusal') refusal += getString(part, 'refusal') ?? ''
  }
  return { text, thinking, refusal }
}

function textOfParts(value: unknown): string {
  if (typeof value === 'string') return value
  let text = ''
  for (const part of asArray(value)) text += getString(part, 'text') ?? ''
  return text
}
