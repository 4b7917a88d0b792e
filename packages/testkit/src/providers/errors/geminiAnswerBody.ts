import { planAnswer } from '../planAnswer.js'
import type { ProviderDialect, RecordedRequest } from '../types.js'
import { geminiGenerate } from '../wire/geminiGenerate.js'

/**
 * Marks a 200 `ErrorReply` that is a Gemini answer with nothing to use in
 * it — a blocked prompt, a malformed function call —, not an error body:
 * the fake sends it as Gemini sends its answers, in the form the request
 * asked for (JSON, one `alt=sse` event, or a one-element JSON array), with
 * the answer's `usageMetadata`, `modelVersion` and `responseId` added when
 * it is sent. `generated`: the model wrote something first (it is billed).
 * A registered symbol: a reply built by one loaded copy of testkit (its
 * `dist`) and sent by another (its source) is still read as an answer.
 */
export const GEMINI_ANSWER: unique symbol = Symbol.for('@hourglass/testkit.geminiAnswer')

export interface GeminiAnswerMark {
  generated: boolean
}

/**
 * `body` completed as a `GenerateContentResponse` to `request`: the
 * `usageMetadata`, `modelVersion` and `responseId` an empty answer to it
 * carries — the prompt's counts alone (nothing written counts), by the
 * same rules (`planAnswer`, `geminiGenerate`) as every other answer, so
 * they cannot drift apart.
 */
export function geminiAnswerBody(
  body: unknown,
  request: RecordedRequest,
  dialect: ProviderDialect,
): unknown {
  const plan = planAnswer({ kind: 'text', text: '' }, request, geminiGenerate, dialect)
  const { candidates: _, ...rest } = geminiGenerate.json(plan) as Record<string, unknown>
  return { ...(body as object), ...rest }
}
