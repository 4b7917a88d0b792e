import { quoted } from '@hourglass/core'
import {
  InvalidChatRequestError,
  PROVIDER_REFUSES_VALUE,
} from '../../errors/InvalidChatRequestError.js'
import { claudeVersion } from './claudeVersion.js'
import { continuesUnthoughtTurn, type Turn } from './continuesUnthoughtTurn.js'
import { lacksEffort, takesAdaptiveThinking } from './lacksEffort.js'
import { deprecatesSampling } from './refuseModelSampling.js'
import { takesThinking } from './refuseModelThinking.js'
import { refusesPrefill } from './refusePrefill.js'

/**
 * `reasoning_effort` (OpenAI's field) → Anthropic's thinking, which the
 * Messages API does only when the request turns it on: without `thinking`
 * Claude neither thinks nor bills for it, and no `thinking` block comes
 * (docs.claude.com, "Extended thinking"). Anthropic's own OpenAI layer
 * ignores `reasoning_effort`; the mapping is Google's for Gemini 2.5, so one
 * effort asks both providers for about as much:
 *
 * - Claude 4.6 and later (`claude-opus-4-6`, `claude-sonnet-5`): adaptive
 *   thinking, `thinking: {type: "adaptive", display: "summarized"}` with
 *   `output_config.effort` — `low` for `minimal` and `low`, else the level
 *   of that name: `max` on every one of them, `xhigh` on all but Opus and
 *   Sonnet 4.6, which throw (platform.claude.com, "Effort": `max` from
 *   Opus and Sonnet 4.6, `xhigh` from Opus 4.7 and Sonnet 5). Opus 4.7 and
 *   later refuse the budget form, and omit the thinking's text unless
 *   `display` asks for it.
 * - Earlier models, and a name that says no version: `thinking: {type:
 *   "enabled", budget_tokens}`, 1,024 tokens for `minimal` and `low`, 8,192
 *   for `medium`, 24,576 for `high`; `xhigh` and `max` have no budget and
 *   throw (Anthropic takes neither effort from these models either).
 *
 * Claude 3 Opus, Sonnet and Haiku, 3.5 Sonnet and Haiku do not think: any
 * effort but `none` to them is refused, last (`refuseModelThinking`).
 *
 * `none` turns nothing on. (The Claude 5 models think by default, their
 * text omitted, and answer 400 to `{type: "disabled"}`: `none` leaves them
 * as they are.) What Anthropic refuses beside thinking throws
 * here, naming the field, before anything is sent (its 400 would go to no
 * fallback): a budget not below `max_tokens` (a smaller one would be a
 * budget nobody asked for), a `temperature` other than 1, a `top_p` below
 * 0.95, a `tool_choice` that forces a tool beside a budget (adaptive
 * thinking takes one, and skips the thinking, but on Opus and Sonnet 5.5,
 * Fable and Mythos 5.1 and later, which refuse it), a conversation that ends
 * with the assistant's message (a prefill; Claude 4.6 and later refuse one
 * whatever the thinking, `refusePrefill`). The thinking is output within
 * `max_tokens`, so the cost estimate's cap holds it.
 *
 * A tool loop is one assistant turn, thought in one mode: with thinking on,
 * Anthropic answers 400 to a turn that does not start with its signed
 * thinking ("When `thinking` is enabled, a final `assistant` message must
 * start with a thinking block"), and an OpenAI client has no way to send
 * the signature back (nor does a fallback from another model keep it). A
 * request that continues such a turn (its last message a tool result)
 * sends no `thinking`, as the docs' "toggling thinking" rules allow: the
 * loop's turn ends unthought, and the next user message thinks again. (The
 * Claude 5 models, which think by default, think on such a request all the
 * same: leaving `thinking` out does not turn theirs off.)
 */
export function applyAnthropicThinking(
  effort: unknown,
  model: string,
  body: Record<string, unknown>,
): void {
  if (
    typeof effort !== 'string' ||
    !(Object.hasOwn(BUDGETS, effort) || effort === 'xhigh' || effort === 'max')
  ) {
    const got = typeof effort === 'string' ? quoted(effort, 40) : typeof effort
    throw new InvalidChatRequestError(
      'reasoning_effort',
      `Anthropic takes none, minimal, low, medium, high, xhigh or max, got ${got}`,
    )
  }
  if (effort === 'none') return
  // A model that does not think (Claude 3 before 3.7 Sonnet) is refused the
  // thinking last, by `refuseModelThinking`: what Anthropic refuses beside
  // thinking would be no remedy there.
  if (!takesThinking(model)) return
  // Nor is a level this model lacks (`xhigh` to Opus or Sonnet 4.6, `xhigh`
  // or `max` where thinking takes a budget): refused last, by
  // `refuseModelEffort` — a provider value, so a gateway skips such a
  // fallback rather than refuse the request for what Anthropic refuses
  // beside thinking (a temperature, a prefill) on a model it never reaches.
  if (lacksEffort(model, effort)) return
  const turns = body['messages'] as readonly Turn[]
  // Claude 4.6 and later refuse a prefill with thinking or without, so
  // turning thinking off is no remedy there: refused last, by `refusePrefill`.
  if (turns.at(-1)?.role === 'assistant' && !refusesPrefill(model)) {
    throw new InvalidChatRequestError(
      'messages',
      'Anthropic takes no prefill (a last message of the assistant) with thinking (reasoning_effort): end with a user message, or send reasoning_effort "none"',
    )
  }
  if (continuesUnthoughtTurn(turns)) return
  const adaptive = takesAdaptiveThinking(model)
  if (adaptive) {
    body['thinking'] = { type: 'adaptive', display: 'summarized' }
    body['output_config'] = { effort: effort === 'minimal' ? 'low' : effort }
  } else {
    const budget = BUDGETS[effort as keyof typeof BUDGETS]
    const maxTokens = body['max_tokens'] as number
    if (maxTokens <= budget) {
      throw new InvalidChatRequestError(
        'max_tokens',
        `Anthropic needs max_tokens above the thinking budget (reasoning_effort "${effort}": ${budget} tokens), got ${maxTokens}`,
      )
    }
    body['thinking'] = { type: 'enabled', budget_tokens: budget }
  }
  refuseBesideThinking(body, adaptive, model)
}

const BUDGETS = { none: 0, minimal: 1024, low: 1024, medium: 8192, high: 24576 } as const

/** What the Messages API answers 400 to when thinking is on. */
function refuseBesideThinking(
  body: Record<string, unknown>,
  adaptive: boolean,
  model: string,
): void {
  // Opus 4.7 and later take no sampling setting, thinking or not ("from
  // 0.95 to 1" sent the client to a `top_p` they refuse too): refused last,
  // by `refuseModelSampling`.
  const sampling = !deprecatesSampling(model)
  const temperature = body['temperature']
  if (sampling && temperature !== undefined && temperature !== 1) {
    throw new InvalidChatRequestError(
      'temperature',
      `Anthropic takes no temperature but 1 with thinking (reasoning_effort), got ${temperature}`,
    )
  }
  const topP = body['top_p']
  if (sampling && typeof topP === 'number' && topP < 0.95) {
    throw new InvalidChatRequestError(
      'top_p',
      `Anthropic takes a top_p from 0.95 to 1 with thinking (reasoning_effort), got ${topP}`,
    )
  }
  // Adaptive thinking takes a forced tool call (but on the models of
  // `refusesForcedTool`): Claude then skips thinking and answers with the
  // call (docs.claude.com, "Thinking with tool use"). What the models that
  // think on a budget refuse, and OpenAI takes (`provider_value`): a
  // gateway leaves it to such a model reached as a fallback, rather than
  // refuse every forced call its primary would have answered.
  if (!adaptive && forcesTool(body)) {
    throw new InvalidChatRequestError(
      'tool_choice',
      'Anthropic cannot force a tool call with a thinking budget (reasoning_effort): use auto or none',
      PROVIDER_REFUSES_VALUE,
    )
  }
}

/**
 * A forced tool call (`tool_choice` `any` or `tool`) to a model whose
 * thinking is always on (`refusesForcedTool`) throws naming `tool_choice`,
 * whatever `reasoning_effort` says — `none` and no effort at all included:
 * those models think when `thinking` is left out, and Anthropic's 400 ("Thinking
 * may not be enabled when tool_choice forces tool use") goes to no fallback.
 * A value only these models refuse (`provider_value`, checked last by
 * `buildAnthropicRequest`): behind a primary that takes it (OpenAI, an older
 * Claude), a gateway refused every forced call up front.
 */
export function refuseForcedToolWhileThinking(model: string, body: Record<string, unknown>): void {
  if (refusesForcedTool(model) && forcesTool(body)) {
    throw new InvalidChatRequestError(
      'tool_choice',
      `Anthropic cannot force a tool call on ${model}, whose thinking is always on: use auto or none`,
      PROVIDER_REFUSES_VALUE,
    )
  }
}

/** `tool_choice` `any` (OpenAI's `required`) or `tool` (a named one). */
function forcesTool(body: Record<string, unknown>): boolean {
  const type = (body['tool_choice'] as { type?: unknown } | undefined)?.type
  return type === 'any' || type === 'tool'
}

/**
 * The models that answer 400 to a forced tool call, their thinking always
 * on (docs.claude.com, "What's new in Claude Opus 5.5", "Thinking in tool
 * and multi-turn workflows"): Opus and Sonnet 5.5 and later, Fable and
 * Mythos 5.1 and later (`claude-opus-5-5`, `claude-fable-5-1`,
 * `anthropic.claude-mythos-6`). Haiku and the other lines take one.
 */
function refusesForcedTool(model: string): boolean {
  const version = claudeVersion(model)
  if (version === undefined) return false
  const { family, major, minor } = version
  if (family !== 'opus' && family !== 'sonnet' && family !== 'fable' && family !== 'mythos') {
    return false
  }
  const since = family === 'opus' || family === 'sonnet' ? 5 : 1
  return major > 5 || (major === 5 && minor >= since)
}
