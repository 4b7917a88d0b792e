import { refuseUnknownOptions } from '@hourglass/core'
import type { TextReply } from './types.js'

const USAGE_NAMES = Object.keys({
  inputTokens: true,
  outputTokens: true,
  cachedInputTokens: true,
  cacheCreationInputTokens: true,
} satisfies Record<keyof NonNullable<TextReply['usage']>, true>)

/**
 * Refuses a text reply's `usage` no provider would report, where the test
 * writes it: each count a whole number ≥ 0, the cache counts (parts of the
 * input) within `inputTokens`. Unchecked, -5, NaN, '10' or 2.5 went on the
 * wire as given (`"cache_read_input_tokens":-5`), and cache counts above the
 * input failed only at request time, as a 500 the client under test read as
 * the provider's.
 */
export function checkUsage(where: string, usage: unknown): void {
  // `null` (a script built from JSON) is no usage, as `??` reads it where the answer is built.
  if (usage == null) return
  refuseUnknownOptions(usage, USAGE_NAMES, `${where} usage`, { what: 'count' })
  const counts = usage as Record<string, unknown>
  for (const name of USAGE_NAMES) {
    const value = counts[name]
    if (value == null) continue
    if (typeof value !== 'number' || !Number.isFinite(value)) {
      throw new TypeError(
        `${where}: usage.${name} must be a number of tokens, got ${typeof value === 'string' ? JSON.stringify(value) : String(value)}`,
      )
    }
    if (!Number.isInteger(value) || value < 0) {
      throw new RangeError(
        `${where}: usage.${name} must be a whole number of tokens ≥ 0, got ${value}`,
      )
    }
  }
  const {
    inputTokens,
    cachedInputTokens = 0,
    cacheCreationInputTokens = 0,
  } = counts as {
    inputTokens?: number
    cachedInputTokens?: number
    cacheCreationInputTokens?: number
  }
  const cached = cachedInputTokens + cacheCreationInputTokens
  if (inputTokens != null && cached > inputTokens) {
    // Anthropic's `input_tokens` would come out negative.
    throw new RangeError(
      `${where}: usage.cachedInputTokens + cacheCreationInputTokens (${cached}) are parts of inputTokens (${inputTokens}) and cannot exceed it`,
    )
  }
}
