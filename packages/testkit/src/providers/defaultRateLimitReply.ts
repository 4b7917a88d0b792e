import { anthropicErrors } from './errors/anthropicErrors.js'
import { doubaoErrors } from './errors/doubaoErrors.js'
import { ernieErrors } from './errors/ernieErrors.js'
import { geminiErrors } from './errors/geminiErrors.js'
import { openAIErrors } from './errors/openAIErrors.js'
import { qwenErrors } from './errors/qwenErrors.js'
import type { ErrorReply, ProviderDialect } from './types.js'

/** Each dialect's usual rate-limit answer for a window of `forMs` ms. */
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
    case 'openai':
    case 'deepseek':
      return openAIErrors.rateLimited({ retryAfterS })
  }
}
