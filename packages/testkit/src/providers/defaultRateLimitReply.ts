import { anthropicErrors } from './errors/anthropicErrors.js'
import { deepseekErrors } from './errors/deepseekErrors.js'
import { doubaoErrors } from './errors/doubaoErrors.js'
import { ernieErrors } from './errors/ernieErrors.js'
import { geminiErrors } from './errors/geminiErrors.js'
import { openAIErrors } from './errors/openAIErrors.js'
import { qwenErrors } from './errors/qwenErrors.js'
import type { ErrorReply, ProviderDialect } from './types.js'

/**
 * Each dialect's usual rate-limit answer for a window of `forMs` ms. Only
 * OpenAI and Anthropic name the window's length (`retry-after`, Gemini in
 * its body's `RetryInfo.retryDelay`); the others' answers carry no wait.
 */
export function defaultRateLimitReply(dialect: ProviderDialect, forMs: number): ErrorReply {
  const retryAfterS = Math.max(1, Math.ceil(forMs / 1000))
  switch (dialect) {
    case 'anthropic':
      return anthropicErrors.rateLimited({ retryAfterS })
    case 'gemini':
      return geminiErrors.resourceExhausted({ retryDelay: `${retryAfterS}s` })
    case 'qwen':
      return qwenErrors.compatibleRateLimited()
    case 'ernie':
      // The ernie dialect's baseURL is Qianfan v2, which answers 429 (v1 answered 200).
      return ernieErrors.v2RateLimited('rpm')
    case 'doubao':
      return doubaoErrors.rateLimited()
    case 'deepseek':
      // DeepSeek's own 429 (`rate_limit_reached`, no rate-limit headers), not
      // OpenAI's: it was OpenAI's, headers and "gpt-4o-mini in organization
      // org-fake" included, unlike the kit's own deepseekErrors.rateLimited().
      return deepseekErrors.rateLimited()
    case 'openai':
      return openAIErrors.rateLimited({ retryAfterS })
  }
}
