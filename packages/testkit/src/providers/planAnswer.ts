import { randomBytes } from 'node:crypto'
import { anthropicEagerInput } from './anthropicEagerInput.js'
import { anthropicThinkingDefaults } from './anthropicThinkingDefaults.js'
import { checkUsage } from './checkUsage.js'
import { applyOutputLimits, readOutputLimits } from './outputLimits.js'
import { splitTokens } from './splitTokens.js'
import type { ProviderDialect, RecordedRequest, TextReply } from './types.js'
import { anthropicMessages } from './wire/anthropicMessages.js'
import type { AnswerPlan, WireFormat } from './wire/WireFormat.js'

/** Resolves a scripted text reply against the request it answers. */
export function planAnswer(
  reply: TextReply,
  request: RecordedRequest,
  wire: WireFormat,
  dialect: ProviderDialect,
  honourOutputLimits = false,
): AnswerPlan {
  // A script function's hand-built reply was not checked where it was written.
  checkUsage('reply', reply.usage)
  const scriptedText = reply.tokens ?? splitTokens(reply.text ?? '')
  // Anthropic thinks only when the request turns thinking on (or the model
  // thinks by default): a scripted `thinking` (and its signature) is then
  // neither generated nor billed.
  const claude = dialect === 'anthropic' && wire === anthropicMessages
  const thinks = !claude || asksAnthropicThinking(request.body)
  const scriptedThinking = thinks ? splitTokens(reply.thinking ?? '') : []
  const scriptedCalls = (reply.toolCalls ?? []).map((call) => {
    const argumentsJson = call.argumentsJson ?? JSON.stringify(call.arguments ?? {})
    return {
      id: call.id ?? `${wire.toolIdPrefix}${randomBytes(9).toString('base64url')}`,
      name: call.name,
      argumentsJson,
      pieces: thirds(argumentsJson),
    }
  })
  // With `honourOutputLimits`, the request's `max_tokens` and stop
  // sequences cut the answer where a real model stops; a script that names
  // its finish reason is sent as written (a `length` it scripted is not cut
  // again).
  const limited = applyOutputLimits(
    { thinkingTokens: scriptedThinking, textTokens: scriptedText, toolCalls: scriptedCalls },
    honourOutputLimits && reply.finishReason === undefined
      ? readOutputLimits(request.route, request.body)
      : { maxTokens: undefined, stopSequences: [] },
  )
  const { thinkingTokens, textTokens, toolCalls } = limited
  const body = (request.body ?? {}) as {
    stream_options?: { include_usage?: unknown; include_obfuscation?: unknown }
    logprobs?: unknown
    top_logprobs?: unknown
    service_tier?: unknown
    generationConfig?: {
      thinkingConfig?: { includeThoughts?: unknown }
      responseLogprobs?: unknown
      logprobs?: unknown
    }
  }
  const cached = reply.usage?.cachedInputTokens ?? 0
  const cacheCreation = reply.usage?.cacheCreationInputTokens ?? 0
  const inputTokens =
    reply.usage?.inputTokens ??
    Math.max(Math.ceil(Buffer.byteLength(request.rawBody) / 4), cached + cacheCreation)
  if (cached + cacheCreation > inputTokens) {
    // Anthropic's `input_tokens` would come out negative.
    throw new TypeError(
      `reply.usage: cachedInputTokens + cacheCreationInputTokens (${cached + cacheCreation}) are parts of inputTokens (${inputTokens}) and cannot exceed it`,
    )
  }
  return {
    dialect,
    model: reply.model ?? request.model ?? 'fake-model',
    id: `${wire.idPrefix}${randomBytes(12).toString('hex')}`,
    created: Math.floor(Date.now() / 1000),
    thinkingTokens,
    signature: thinks ? reply.signature : undefined,
    thinkingShown: !claude || showsAnthropicThinking(request.body),
    textTokens,
    toolCalls,
    finishReason:
      reply.finishReason ?? limited.finishReason ?? (toolCalls.length > 0 ? 'tool_calls' : 'stop'),
    stopSequence: limited.stopSequence,
    // A stop sequence sends nothing after the text: what it generated past
    // the tokens sent is the sequence's own.
    unsentStopTokens:
      limited.stopSequence === undefined
        ? 0
        : limited.generatedTokens - thinkingTokens.length - textTokens.length,
    inputTokens,
    outputTokens: reply.usage?.outputTokens ?? limited.generatedTokens,
    cachedInputTokens: cached,
    cacheCreationInputTokens: cacheCreation,
    streamsInputEagerly: anthropicEagerInput(dialect, request.route, request.body, request.headers),
    includeUsage: body.stream_options?.include_usage === true,
    includeThoughts: body.generationConfig?.thinkingConfig?.includeThoughts === true,
    logprobs:
      request.route === 'openai-chat'
        ? openAILogprobsAsked(body)
        : geminiLogprobsAsked(body.generationConfig),
    // On by default: only an explicit `false` turns it off.
    obfuscation: dialect === 'openai' && body.stream_options?.include_obfuscation !== false,
    serviceTier: SERVED_TIERS.has(body.service_tier) ? String(body.service_tier) : 'default',
  }
}

/**
 * The Messages API sends `thinking` blocks (and `thinking_delta` /
 * `signature_delta` events) only to a request that turns thinking on:
 * `thinking: {type: "enabled", budget_tokens}` or `{type: "adaptive"}`
 * (docs.claude.com, "Extended thinking"); without it Claude does not think,
 * and bills nothing for it. Adaptive thinking beside a `tool_choice` that
 * forces a tool skips the thinking: the answer starts with the call (the
 * models of `refusesForcedTool` never get here: they answer 400 first).
 */
function asksAnthropicThinking(body: unknown): boolean {
  const json = body as {
    model?: unknown
    thinking?: { type?: unknown } | null
    tool_choice?: { type?: unknown }
  } | null
  const forced = json?.tool_choice?.type === 'any' || json?.tool_choice?.type === 'tool'
  // The Claude 5 models think adaptively without a `thinking` field, as
  // `{type: "adaptive"}` asks: the fake left them unthinking, so a client
  // never met the signed thinking block their every answer opens with.
  const type =
    json?.thinking === undefined || json.thinking === null
      ? anthropicThinkingDefaults(json?.model).thinks
        ? 'adaptive'
        : undefined
      : json.thinking.type
  return type === 'enabled' || (type === 'adaptive' && !forced)
}

/**
 * The thinking's text is sent unless `thinking.display` is `"omitted"`, or
 * left unset on a model whose default it is (`anthropicThinkingDefaults`):
 * then the block comes with `thinking: ""` and its signature. The fake sent
 * the text to every model, so a client that showed or kept Opus 4.7's
 * thinking without asking for it passed against the fake only.
 */
function showsAnthropicThinking(body: unknown): boolean {
  const json = body as { model?: unknown; thinking?: { display?: unknown } | null } | null
  const display = json?.thinking?.display
  if (display === 'summarized') return true
  if (display === 'omitted') return false
  return !anthropicThinkingDefaults(json?.model).omitsText
}

/**
 * Gemini answers `logprobsResult` only to `responseLogprobs: true`, with
 * `logprobs` (a whole number, at most Gemini's 20) top candidates per step.
 */
function geminiLogprobsAsked(
  config: { responseLogprobs?: unknown; logprobs?: unknown } | undefined,
): number | undefined {
  if (config?.responseLogprobs !== true) return undefined
  return Number.isInteger(config.logprobs)
    ? Math.min(Math.max(0, config.logprobs as number), 20)
    : 0
}

/**
 * Chat Completions answers `choices[].logprobs` (`{content: [...], refusal:
 * null}`) only to `logprobs: true`, with `top_logprobs` (0 to 20) alternatives
 * per token; not asked, `logprobs: null`.
 */
function openAILogprobsAsked(body: {
  logprobs?: unknown
  top_logprobs?: unknown
}): number | undefined {
  if (body.logprobs !== true) return undefined
  return Number.isInteger(body.top_logprobs)
    ? Math.min(Math.max(0, body.top_logprobs as number), 20)
    : 0
}

/** Tiers OpenAI serves as asked; `auto`, `default` (or none) are served as `default`. */
const SERVED_TIERS: ReadonlySet<unknown> = new Set(['priority', 'flex', 'scale'])

/** Tool arguments stream in a few pieces, as real providers send them. */
function thirds(json: string): string[] {
  const size = Math.max(1, Math.ceil(json.length / 3))
  const pieces: string[] = []
  for (let i = 0; i < json.length; i += size) pieces.push(json.slice(i, i + size))
  return pieces
}
