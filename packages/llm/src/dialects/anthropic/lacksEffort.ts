import { claudeVersion } from './claudeVersion.js'

/**
 * A `reasoning_effort` level the model does not take: `xhigh` on Claude
 * Opus and Sonnet 4.6 (it came with Opus 4.7 and Sonnet 5), `xhigh` and
 * `max` on a model that thinks by a budget (before Claude 4.6: neither has
 * one). Anthropic's Effort page. Refused last (`refuseModelEffort`).
 */
export function lacksEffort(model: string, effort: unknown): boolean {
  if (effort !== 'xhigh' && effort !== 'max') return false
  if (!takesAdaptiveThinking(model)) return true
  const version = claudeVersion(model)
  return effort === 'xhigh' && version?.major === 4 && version.minor === 6
}

/**
 * Claude 4.6 and later: `claude-opus-4-6`, `claude-sonnet-5`,
 * `anthropic.claude-opus-4-7`. `claude-3-7-sonnet-20250219` is 3.7 and
 * `claude-sonnet-4-20250514` 4 (a date is no minor version).
 */
export function takesAdaptiveThinking(model: string): boolean {
  const version = claudeVersion(model)
  if (version === undefined) return false
  return version.major > 4 || (version.major === 4 && version.minor >= 6)
}
