import { randomBytes } from 'node:crypto'
import type { RecordedRequest } from '../types.js'

/**
 * Marks a 200 `ErrorReply` that is a Gemini answer with nothing to use in
 * it — a blocked prompt, a malformed function call —, not an error body:
 * the fake sends it as Gemini sends its answers, in the form the request
 * asked for (JSON, one `alt=sse` event, or a one-element JSON array), with
 * the answer's `usageMetadata`, `modelVersion` and `responseId` added when
 * it is sent. `generated`: the model wrote something first (it is billed).
 */
export const GEMINI_ANSWER: unique symbol = Symbol('hourglass.geminiAnswer')

export interface GeminiAnswerMark {
  generated: boolean
}

/**
 * `body` completed as a `GenerateContentResponse` to `request`: the prompt's
 * counts (the fake's default, a token per 4 bytes of body; zeros left out,
 * as proto3 JSON leaves them), the model asked for and a response id.
 */
export function geminiAnswerBody(body: unknown, request: RecordedRequest): unknown {
  const prompt = Math.ceil(Buffer.byteLength(request.rawBody) / 4)
  return {
    ...(body as object),
    ...(prompt > 0
      ? {
          usageMetadata: {
            promptTokenCount: prompt,
            totalTokenCount: prompt,
            promptTokensDetails: [{ modality: 'TEXT', tokenCount: prompt }],
          },
        }
      : {}),
    modelVersion: request.model ?? 'fake-model',
    responseId: randomBytes(12).toString('base64url'),
  }
}
