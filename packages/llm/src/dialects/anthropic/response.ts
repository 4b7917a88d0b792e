import { malformedReply } from '../../errors/ProviderReplyError.js'
import type { ChatResponse, ContentBlock, FinishReason, Usage } from '../../types.js'
import {
  anyCount,
  countOf,
  MAX_TOKEN_COUNT,
  mapFinish,
  textOf,
  usageOf,
  withUsageDetails,
} from '../blocks.js'
import { type ResponseMeta, readRequestId } from '../Dialect.js'
import { markNoAnswer } from '../noAnswer.js'
import { EACH, rawJsonValues } from '../rawJsonValues.js'
import { rewritesAnInteger } from '../roundedByParsing.js'
import { asArray, get, getRecord, getString, parseAnswerJson } from '../safeJson.js'
import { holdsUnsafeInteger } from '../toolArguments.js'
import { markUnfinished } from '../unfinishedCall.js'

export const ANTHROPIC_FINISH: Readonly<Record<string, FinishReason>> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  max_tokens: 'length',
  model_context_window_exceeded: 'length',
  tool_use: 'tool_calls',
  refusal: 'content_filter',
  pause_turn: 'unknown',
}

/**
 * Anthropic's stop when the context window is full (Claude Sonnet 4.5 and
 * later), not the `max_tokens` cap: still `length`, but carried as
 * `providerFinishReason` so the output-limit recovery can tell it apart — a
 * raised cap or a "continue" turn cannot get past a full window.
 */
export const ANTHROPIC_WINDOW_FULL = 'model_context_window_exceeded'

/**
 * Cache reads and writes are input too: they are billed and they fill the
 * window. The reads are also `cachedInputTokens`, as OpenAI's `cached_tokens`
 * is the cached part of its `prompt_tokens`; the writes `cacheCreationInputTokens`. Anthropic reports no separate
 * count of thinking tokens (they are in `output_tokens`).
 */
export function anthropicUsage(usage: unknown, outputTokens?: unknown): Usage {
  const cacheRead = get(usage, 'cache_read_input_tokens')
  // Each count clamped before the sum, and the sum after: three counts of
  // 1e308 summed to Infinity, read as an input of 0.
  const input = Math.min(
    (countOf(get(usage, 'input_tokens')) ?? 0) +
      (countOf(get(usage, 'cache_creation_input_tokens')) ?? 0) +
      (countOf(cacheRead) ?? 0),
    MAX_TOKEN_COUNT,
  )
  const normalised = withUsageDetails(
    usageOf(input, outputTokens ?? get(usage, 'output_tokens')),
    cacheRead,
    undefined,
  )
  const cacheWrite = countOf(get(usage, 'cache_creation_input_tokens'))
  if (cacheWrite !== undefined) {
    normalised.cacheCreationInputTokens = cacheWrite
    // The writes split by lifetime (`cache_creation`): a 1-hour entry is
    // billed at 2× the input price, a 5-minute one at 1.25×. Read as one
    // count, a price set at the 5-minute rate charged 1-hour writes 62.5%
    // of their bill. Never more than the writes it is a part of.
    const hour = countOf(get(getRecord(usage, 'cache_creation'), 'ephemeral_1h_input_tokens'))
    if (hour !== undefined) normalised.cacheCreation1hInputTokens = Math.min(hour, cacheWrite)
  }
  return normalised
}

/** Whether Anthropic's `usage` (and a stream's `output_tokens`) had any count `anthropicUsage` reads. */
export function anthropicUsageReported(usage: unknown, outputTokens?: unknown): boolean {
  return anyCount(
    get(usage, 'input_tokens'),
    get(usage, 'cache_creation_input_tokens'),
    get(usage, 'cache_read_input_tokens'),
    outputTokens ?? get(usage, 'output_tokens'),
  )
}

/**
 * The headers an answer on Anthropic's wire names itself by, in order:
 * Anthropic's `request-id`; DeepSeek's Anthropic route
 * (api.deepseek.com/anthropic) sends no `request-id`, only `x-ds-trace-id`.
 */
export const ANTHROPIC_REQUEST_ID_HEADERS: readonly string[] = Object.freeze([
  'request-id',
  'x-ds-trace-id',
])

/**
 * Messages API body (its text, or that parsed) → normalised response.
 * `redacted_thinking` is kept as empty thinking, `redacted`, its `data` as
 * the signature. A `tool_use` whose `input` holds an integer that parsing
 * and writing again change (`rewritesAnInteger`: rounded, or an exact double
 * written with other digits) keeps the text as written as `rawArguments` (`rawJsonValues`),
 * as the same answer streamed does, when the text is at hand.
 */
export function parseAnthropicResponse(
  body: unknown,
  meta: ResponseMeta = {},
  requestIdHeader: string | readonly string[] = ANTHROPIC_REQUEST_ID_HEADERS,
): ChatResponse {
  const text = typeof body === 'string' ? body : meta.text
  const json = typeof body === 'string' ? parseAnswerJson(body) : body
  const blocks = get(json, 'content')
  if (getString(json, 'type') !== 'message' || !Array.isArray(blocks)) {
    throw malformedReply('Anthropic message (no content array)')
  }
  const content: ContentBlock[] = []
  let raw: Map<number, string> | undefined
  for (const [position, block] of asArray(blocks).entries()) {
    const type = getString(block, 'type')
    if (type === 'text') content.push({ type: 'text', text: getString(block, 'text') ?? '' })
    else if (type === 'thinking') {
      content.push({
        type: 'thinking',
        thinking: getString(block, 'thinking') ?? '',
        signature: getString(block, 'signature'),
      })
    } else if (type === 'redacted_thinking') {
      // Sent back as it came (`buildAnthropicRequest`): the `data` is no signature.
      content.push({
        type: 'thinking',
        thinking: '',
        signature: getString(block, 'data'),
        redacted: true,
      })
    } else if (type === 'tool_use') {
      const input = getRecord(block, 'input') ?? {}
      // Walked only for such an answer: a whole body is not scanned twice for nothing.
      if (text !== undefined && holdsUnsafeInteger(input)) raw ??= rawToolInputs(text)
      const written = raw?.get(position)
      content.push({
        type: 'tool_call',
        id: getString(block, 'id') ?? '',
        name: getString(block, 'name') ?? '',
        arguments: input,
        ...(written !== undefined && rewritesAnInteger(written) ? { rawArguments: written } : {}),
      })
    }
  }
  const requestId = readRequestId(meta.headers, requestIdHeader)
  const usage = get(json, 'usage')
  const tier = anthropicServiceTier(usage)
  const reason = get(json, 'stop_reason')
  // Stopped at its token limit on a `tool_use`: that call is incomplete
  // (Anthropic's docs), its `input` only the members finished before the
  // cut — `{ to }` of an email whose body never came (`markUnfinished`).
  const last = content.at(-1)
  if (last?.type === 'tool_call' && mapFinish(ANTHROPIC_FINISH, reason) === 'length') {
    markUnfinished(last)
  }
  const response: ChatResponse = {
    id: getString(json, 'id') ?? '',
    model: getString(json, 'model') ?? '',
    provider: 'anthropic',
    content,
    text: textOf(content),
    finishReason: mapFinish(ANTHROPIC_FINISH, reason),
    ...(reason === ANTHROPIC_WINDOW_FULL ? { providerFinishReason: ANTHROPIC_WINDOW_FULL } : {}),
    usage: anthropicUsage(usage),
    // Zeros that mean "not said" are told apart (`ChatResponse.usageReported`).
    ...(anthropicUsageReported(usage) ? {} : { usageReported: false as const }),
    ...(requestId === undefined ? {} : { providerRequestId: requestId }),
    ...(tier === undefined ? {} : { serviceTier: tier }),
  }
  return markNoAnswer(response, reason !== undefined && reason !== null)
}

/**
 * The tier that served the answer: `usage.service_tier` (`standard`,
 * `priority`, `batch`), when said — the cost budget charges the answer at
 * it (unread, every answer was charged at the dearest tier listed).
 */
export function anthropicServiceTier(usage: unknown): string | undefined {
  return getString(usage, 'service_tier') || undefined
}

/** The text of each `tool_use` block's `input` as written, by the block's place in `content`. */
function rawToolInputs(text: string): Map<number, string> {
  const inputs = new Map<number, string>()
  for (const { indexes, text: written } of rawJsonValues(text, ['content', EACH, 'input']))
    inputs.set(indexes[0] as number, written)
  return inputs
}
