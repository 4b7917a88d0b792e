import {
  anthropicErrors,
  openAIErrors,
  type ProviderReply,
  type RecordedRequest,
  reply,
} from '@hourglass/testkit'
import { CASE_ID_HEADER } from './Chain.js'
import { logNormalMs, seededRandom, seedOf } from './random.js'

/** The big model the services ask for first, and the small one they may fall back to. */
export const LARGE_MODEL = 'fake-large'
export const SMALL_MODEL = 'fake-small'

/**
 * How the fake provider behaves, like a real hosted model on a busy day: a
 * log-normal latency with a long tail, an occasional slow first token, a few
 * 429s (with `retry-after: 1`) and 529s (overloaded). The draw depends only on
 * (seed, request case, model, how many times this case asked this model), so
 * the toolkit chain and the naive chain meet exactly the same provider.
 */
export function providerScript(seed: number): (request: RecordedRequest) => ProviderReply {
  const asked = new Map<string, number>()
  return (request) => {
    const model = request.model ?? LARGE_MODEL
    const caseId = request.headers[CASE_ID_HEADER] ?? String(request.index)
    const key = `${caseId}/${model}`
    const attempt = (asked.get(key) ?? 0) + 1
    asked.set(key, attempt)
    const random = seededRandom(seedOf(seed, caseId, model, attempt))
    const roll = random()
    const text = `Answer to request ${caseId} from ${model}.`
    if (model === SMALL_MODEL) {
      if (roll < 0.03) return anthropicErrors.overloaded()
      return reply.text(text, { latencyMs: Math.round(logNormalMs(random, 120, 0.35)) })
    }
    if (roll < 0.1) return { ...openAIErrors.rateLimited({ retryAfterS: 1 }), latencyMs: 20 }
    if (roll < 0.16) return { ...anthropicErrors.overloaded(), latencyMs: 30 }
    if (roll < 0.24) {
      // Accepted at once, then a long think before the first token.
      return reply.text(text, {
        latencyMs: 40,
        firstTokenDelayMs: 1500 + Math.round(random() * 2500),
      })
    }
    return reply.text(text, { latencyMs: Math.round(logNormalMs(random, 380, 0.45)) })
  }
}
