import { anthropicAlwaysThinks } from './anthropicAlwaysThinks.js'
import { anthropicEffortRefused } from './anthropicEffortRefused.js'
import { anthropicOutputFormatRefused } from './anthropicOutputFormatRefused.js'
import { anthropicThinkingDefaults } from './anthropicThinkingDefaults.js'
import { anthropicThinkingTypeRefused } from './anthropicThinkingTypeRefused.js'
import { claudeVersion } from './claudeVersion.js'
import { anthropicErrors } from './errors/anthropicErrors.js'
import { refusesForcedTool } from './refusesForcedTool.js'
import type { ErrorReply, ProviderDialect, ProviderRoute } from './types.js'

const DOCS = 'https://docs.claude.com/en/docs/build-with-claude/extended-thinking'

/**
 * Anthropic's 400 `invalid_request_error` for what the Messages API refuses
 * beside thinking (`thinking: {type: "enabled", budget_tokens}` or `{type:
 * "adaptive"}`), in its words; undefined when the request turns thinking
 * off, or is none of these. The fake answered them 200, so a client that
 * sent one passed against it and failed against the API
 * (docs.claude.com, "Extended thinking", "Thinking with tool use"):
 * - an `output_config.effort` the model does not take, with thinking or
 *   without (`anthropicEffortRefused`: `max` before Claude 4.6, `xhigh`
 *   before Opus 4.7, any before Opus 4.5), and an `output_config.format`
 *   it does not take (`anthropicOutputFormatRefused`), thinking or not;
 * - a `thinking.type` the model does not take (`anthropicThinkingTypeRefused`:
 *   one the API does not know, `adaptive` where only a budget is taken,
 *   `between_tools` but on Sonnet 5.5);
 * - the budget form at all on Opus 4.7 and later and the Claude 5 models
 *   (`anthropicThinkingDefaults`), which think adaptively only;
 * - thinking turned off (`{type: "disabled"}`) on the models whose thinking
 *   is always on (`anthropicAlwaysThinks`), and on Opus 5 beside an
 *   `output_config.effort` above `high` ("output_config.effort 'xhigh' is
 *   not supported when thinking is disabled on this model. …", quoted in
 *   anthropics/claude-code#79798; platform.claude.com, "What's new in
 *   Claude Opus 5": thinking may be disabled at effort `high` or below).
 *   The fake took both and answered without thinking;
 * - a `budget_tokens` below 1,024, or not below `max_tokens` (but with
 *   interleaved thinking — the `interleaved-thinking-2025-05-14` beta
 *   beside tools — where the budget is the whole turn's and may exceed it);
 * - a `temperature` other than 1, a `top_p` below 0.95;
 * - a `tool_choice` that forces a tool (`any`, `tool`) beside a budget
 *   (adaptive thinking takes one: Claude skips the thinking), and on the
 *   models of `refusesForcedTool`, whose thinking is always on, at all;
 * - an assistant turn in progress that does not start with a thinking
 *   block: a prefill (the last message the assistant's), or, beside a
 *   budget, a tool loop's turn (the last message a tool result) whose
 *   thinking was not sent back. Adaptive thinking may skip thinking (it does
 *   under a forced tool), so a loop's turn without any is continued.
 * Anthropic's own API only, as `anthropicMaxTokensMissing`.
 */
export function anthropicThinkingRefused(
  dialect: ProviderDialect,
  route: ProviderRoute,
  body: unknown,
  headers: Record<string, string> = {},
): ErrorReply | undefined {
  if (dialect !== 'anthropic' || route !== 'anthropic-messages') return undefined
  if (typeof body !== 'object' || body === null) return undefined
  const json = body as Record<string, unknown>
  const typeRefused = anthropicThinkingTypeRefused(json)
  if (typeRefused !== undefined) return typeRefused
  // An effort level the model lacks, thinking or not (`anthropicEffortRefused`).
  const effortRefused = anthropicEffortRefused(json)
  if (effortRefused !== undefined) return effortRefused
  // The other half of `output_config`, thinking or not.
  const formatRefused = anthropicOutputFormatRefused(json)
  if (formatRefused !== undefined) return formatRefused
  const refuse = (message: string) => anthropicErrors.invalidRequest(message)
  const toolChoice = (json['tool_choice'] as { type?: unknown } | null | undefined)?.type
  const forced = toolChoice === 'any' || toolChoice === 'tool'
  // Whatever `thinking` says: these models think without it.
  if (forced && refusesForcedTool(json['model'])) {
    return refuse(FORCED_TOOL)
  }
  const thinking = json['thinking'] as { type?: unknown; budget_tokens?: unknown } | null
  const type = thinking?.type
  if (type === 'disabled') return disabledRefused(json)
  if (type !== 'enabled' && type !== 'adaptive') return undefined
  if (type === 'enabled' && anthropicThinkingDefaults(json['model']).adaptiveOnly) {
    return refuse(
      '"thinking.type.enabled" is not supported for this model. Use "thinking.type.adaptive" and "output_config.effort" to control thinking behavior.',
    )
  }
  if (type === 'enabled' && typeof thinking?.budget_tokens === 'number') {
    if (thinking.budget_tokens < 1024) {
      return refuse('thinking.enabled.budget_tokens: Input should be greater than or equal to 1024')
    }
    const maxTokens = json['max_tokens']
    if (
      typeof maxTokens === 'number' &&
      maxTokens <= thinking.budget_tokens &&
      !interleaved(json, headers)
    ) {
      return refuse(
        `\`max_tokens\` must be greater than \`thinking.budget_tokens\`. Please consult our documentation at ${DOCS}#max-tokens-and-context-window-size`,
      )
    }
  }
  const temperature = json['temperature']
  if (typeof temperature === 'number' && temperature !== 1) {
    return refuse(
      `\`temperature\` may only be set to 1 when thinking is enabled. Please consult our documentation at ${DOCS}#feature-compatibility`,
    )
  }
  const topP = json['top_p']
  if (typeof topP === 'number' && topP < 0.95) {
    return refuse(
      `\`top_p\` must be greater than or equal to 0.95 or unset when thinking is enabled. Please consult our documentation at ${DOCS}#feature-compatibility`,
    )
  }
  if (type === 'enabled' && forced) return refuse(FORCED_TOOL)
  return unthoughtTurn(json['messages'], type === 'enabled')
}

const FORCED_TOOL = 'Thinking may not be enabled when tool_choice forces tool use.'

/** `thinking: {type: "disabled"}` where the model will not stop thinking (see above). */
function disabledRefused(json: Record<string, unknown>): ErrorReply | undefined {
  if (anthropicAlwaysThinks(json['model'])) {
    return anthropicErrors.invalidRequest(
      '"thinking.type.disabled" is not supported for this model. Use "thinking.type.adaptive" and "output_config.effort" to control thinking behavior.',
    )
  }
  const effort = (json['output_config'] as { effort?: unknown } | null | undefined)?.effort
  if ((effort === 'xhigh' || effort === 'max') && isOpus5(json['model'])) {
    return anthropicErrors.invalidRequest(
      `output_config.effort '${effort}' is not supported when thinking is disabled on this model. Use effort 'high' or below, or enable thinking.`,
    )
  }
  return undefined
}

/** Opus 5.0 (`claude-opus-5`, not a date's digits): Opus 5.5 and later never stop thinking. */
function isOpus5(model: unknown): boolean {
  const version = claudeVersion(model)
  return version?.family === 'opus' && version.major === 5 && version.minor === 0
}

const INTERLEAVED = 'interleaved-thinking-2025-05-14'

/**
 * Interleaved thinking (the beta header, which may list others, beside
 * tools): `budget_tokens` is the whole turn's, across its tool calls, and
 * may exceed `max_tokens` (docs.claude.com, "Interleaved thinking").
 */
function interleaved(json: Record<string, unknown>, headers: Record<string, string>): boolean {
  const betas = (headers['anthropic-beta'] ?? '').split(',').map((beta) => beta.trim())
  return betas.includes(INTERLEAVED) && Array.isArray(json['tools']) && json['tools'].length > 0
}

type Message = { role?: unknown; content?: unknown }

/**
 * The assistant turn the request continues — a prefill, or (`budget`) a
 * tool loop's, back to the last user message that is no tool result — must
 * start with a `thinking` or `redacted_thinking` block.
 */
function unthoughtTurn(messages: unknown, budget: boolean): ErrorReply | undefined {
  if (!Array.isArray(messages) || messages.length === 0) return undefined
  const list = messages as Message[]
  const lastIndex = list.length - 1
  let start: number | undefined
  if (list[lastIndex]?.role === 'assistant') {
    start = lastIndex
    // A prefill continues the turn before it when that turn is a tool loop's.
  } else if (!budget || !hasToolResult(list[lastIndex])) {
    return undefined
  }
  for (let i = (start ?? lastIndex) - 1; i >= 0; i--) {
    // A message that is no object (`null`) is no turn: it ends the search,
    // not the fake (a TypeError here was its own 500 to the client's body).
    const message = list[i] as Message | null
    if (message?.role === 'assistant') start = i
    else if (!hasToolResult(message)) break
  }
  if (start === undefined) return undefined
  const first = blocksOf(list[start] as Message)[0]
  const found = typeof first === 'string' ? 'text' : first?.type
  if (found === 'thinking' || found === 'redacted_thinking') return undefined
  return anthropicErrors.invalidRequest(
    `messages.${start}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${String(found)}\`. When \`thinking\` is enabled, a final \`assistant\` message must start with a thinking block (preceeding the lastmost set of \`tool_use\` and \`tool_result\` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable \`thinking\`. Please consult our documentation at ${DOCS}`,
  )
}

function blocksOf(message: Message): (string | { type?: unknown })[] {
  const content = message.content
  if (typeof content === 'string') return [content]
  return Array.isArray(content) ? (content as { type?: unknown }[]) : []
}

function hasToolResult(message: Message | null | undefined): boolean {
  return (
    message?.role === 'user' &&
    blocksOf(message).some((block) => typeof block === 'object' && block?.type === 'tool_result')
  )
}
