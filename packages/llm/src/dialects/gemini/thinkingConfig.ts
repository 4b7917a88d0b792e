import { quoted } from '@hourglass/core'
import { InvalidChatRequestError } from '../../errors/InvalidChatRequestError.js'
import { geminiVersion } from './geminiVersion.js'

/**
 * `reasoning_effort` (OpenAI's field) → `generationConfig.thinkingConfig`,
 * as Google's own OpenAI compatibility layer maps it
 * (https://ai.google.dev/gemini-api/docs/openai, "Thinking"): on Gemini 2.5
 * a `thinkingBudget` of 1,024 tokens for `minimal` and `low`, 8,192 for
 * `medium`, 24,576 for `high`, 0 (thinking off) for `none`; on Gemini 3 and
 * later the `thinkingLevel` of that name. Gemini 3's thinking cannot be
 * turned off, so `none` is its least level: `minimal` where the model has
 * it (the Gemini 3 Flash models before 3.7), else `low` (Pro models, Gemini
 * 3.7 and 3.8 Flash and Gemini 4 have no `minimal`, and get `low` for
 * `minimal` too: Google's table of thinking levels, and "What's new in
 * Gemini 3.7"). A model whose name says no
 * version (a tuned model) gets the budget, which Gemini 3 also takes.
 * Gemini 2.5 Pro, whose thinking cannot be turned off either, answers
 * `none`'s budget of 0 with a 400, as it answers Google's layer: the
 * request throws before sending, last (`refuseModelThinking`).
 *
 * Gemini sends its thought summaries only to a request that sets
 * `includeThoughts` (ai.google.dev/gemini-api/docs/thinking, "Thought
 * summaries"); without it the thinking is billed but never seen. So asking
 * for an effort asks for the thinking too, which comes back as `thinking`
 * blocks, as DeepSeek's and Anthropic's do — but for `none`, which asks for
 * no thinking. The thinking counts within `maxOutputTokens` (Gemini caps
 * thoughts and answer together), so the cost estimate's cap holds.
 *
 * `xhigh` (OpenAI's deepest effort) is Gemini's `xhigh` level on Gemini 4
 * and later (only some of them have it: the others answer their own 400);
 * Gemini 3 has no such level and
 * Gemini 2.5 no such budget, so there it throws. Any other value (a number,
 * a misspelling, `LOW`) throws naming the field: Google defines nothing for
 * it, and Gemini would answer a bad request no fallback follows.
 */
export function geminiThinkingConfig(effort: unknown, model: string): Record<string, unknown> {
  const major = geminiVersion(model)?.major ?? 0
  const levels = major >= 3
  if (
    typeof effort !== 'string' ||
    !(Object.hasOwn(BUDGETS, effort) || (major >= 4 && effort === 'xhigh'))
  ) {
    const got = typeof effort === 'string' ? quoted(effort, 40) : typeof effort
    throw new InvalidChatRequestError(
      'reasoning_effort',
      major >= 4
        ? `Gemini takes none, minimal, low, medium, high or xhigh, got ${got}`
        : `Gemini ${levels ? '3' : '2.5'} takes none, minimal, low, medium or high, got ${got}`,
    )
  }
  const level = effort as Effort
  const config: Record<string, unknown> = levels
    ? { thinkingLevel: thinkingLevel(level, hasMinimalLevel(model)) }
    : { thinkingBudget: BUDGETS[level as Exclude<Effort, 'xhigh'>] }
  if (level !== 'none') config['includeThoughts'] = true
  return config
}

type Effort = 'none' | 'minimal' | 'low' | 'medium' | 'high' | 'xhigh'

const BUDGETS: Readonly<Record<Exclude<Effort, 'xhigh'>, number>> = {
  none: 0,
  minimal: 1024,
  low: 1024,
  medium: 8192,
  high: 24576,
}

function thinkingLevel(effort: Effort, minimal: boolean): string {
  if (effort === 'none' || effort === 'minimal') return minimal ? 'minimal' : 'low'
  return effort
}

/**
 * The models with a `minimal` level: the Gemini 3 Flash models before 3.7
 * (`gemini-3-flash-preview`, `gemini-3.5-flash-lite`, `gemini-3.6-flash`).
 * Pro models (`gemini-3-pro-preview`, `models/gemini-3.1-pro`), Gemini 3.7
 * Flash (low, medium and high only), 3.8 Flash and Gemini 4 have none.
 */
function hasMinimalLevel(model: string): boolean {
  const version = geminiVersion(model)
  return version !== undefined && version.major === 3 && version.minor < 7 && !version.pro
}
