import { quoted } from '@hourglass/core'
import { InvalidChatRequestError } from '../../errors/InvalidChatRequestError.js'

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
 *   of that name (`xhigh` only where the model has it; the others answer
 *   their own 400). Opus 4.7 and later refuse the budget form, and omit the
 *   thinking's text unless `display` asks for it.
 * - Earlier models, and a name that says no version: `thinking: {type:
 *   "enabled", budget_tokens}`, 1,024 tokens for `minimal` and `low`, 8,192
 *   for `medium`, 24,576 for `high`; `xhigh` has no budget and throws.
 *
 * `none` turns nothing on. (The Claude 5 models think by default, their
 * text omitted, and answer 400 to `{type: "disabled"}`: `none` leaves them
 * as they are.) What Anthropic refuses beside thinking throws
 * here, naming the field, before anything is sent (its 400 would go to no
 * fallback): a budget not below `max_tokens` (a smaller one would be a
 * budget nobody asked for), a `temperature` other than 1, a `top_p` below
 * 0.95, a `tool_choice` that forces a tool. The thinking is output within
 * `max_tokens`, so the cost estimate's cap holds it.
 */
export function applyAnthropicThinking(
  effort: unknown,
  model: string,
  body: Record<string, unknown>,
): void {
  if (typeof effort !== 'string' || !(Object.hasOwn(BUDGETS, effort) || effort === 'xhigh')) {
    const got = typeof effort === 'string' ? quoted(effort, 40) : typeof effort
    throw new InvalidChatRequestError(
      'reasoning_effort',
      `Anthropic takes none, minimal, low, medium, high or xhigh, got ${got}`,
    )
  }
  if (effort === 'none') return
  if (takesAdaptiveThinking(model)) {
    body['thinking'] = { type: 'adaptive', display: 'summarized' }
    body['output_config'] = { effort: effort === 'minimal' ? 'low' : effort }
  } else {
    if (effort === 'xhigh') {
      throw new InvalidChatRequestError(
        'reasoning_effort',
        `${model} takes a thinking budget, and xhigh has none: use minimal, low, medium or high`,
      )
    }
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
  refuseBesideThinking(body)
}

const BUDGETS = { none: 0, minimal: 1024, low: 1024, medium: 8192, high: 24576 } as const

/** What the Messages API answers 400 to when thinking is on. */
function refuseBesideThinking(body: Record<string, unknown>): void {
  const temperature = body['temperature']
  if (temperature !== undefined && temperature !== 1) {
    throw new InvalidChatRequestError(
      'temperature',
      `Anthropic takes no temperature but 1 with thinking (reasoning_effort), got ${temperature}`,
    )
  }
  const topP = body['top_p']
  if (typeof topP === 'number' && topP < 0.95) {
    throw new InvalidChatRequestError(
      'top_p',
      `Anthropic takes a top_p from 0.95 to 1 with thinking (reasoning_effort), got ${topP}`,
    )
  }
  const toolChoice = (body['tool_choice'] as { type?: unknown } | undefined)?.type
  if (toolChoice === 'any' || toolChoice === 'tool') {
    throw new InvalidChatRequestError(
      'tool_choice',
      'Anthropic cannot force a tool call with thinking (reasoning_effort): use auto or none',
    )
  }
}

/**
 * Claude 4.6 and later: `claude-opus-4-6`, `claude-sonnet-5`,
 * `anthropic.claude-opus-4-7`. `claude-3-7-sonnet-20250219` is 3.7 and
 * `claude-sonnet-4-20250514` 4 (a date is no minor version).
 */
function takesAdaptiveThinking(model: string): boolean {
  const match = /claude-(?:[a-z]+-)?(\d+)(?:-(\d)(?!\d))?/.exec(model)
  if (match === null) return false
  const major = Number(match[1])
  const minor = Number(match[2] ?? 0)
  return major > 4 || (major === 4 && minor >= 6)
}
