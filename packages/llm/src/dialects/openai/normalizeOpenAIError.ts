import type { NormalizedError } from '../../types.js'
import { type BodyVerdict, classifyError, classifyStreamError } from '../classifyError.js'
import type { ErrorInput, StreamErrorInput } from '../ErrorInput.js'
import { readGeminiError } from '../gemini/errors.js'
import { getRecord, getString } from '../safeJson.js'
import { readOpenAIError } from './errors.js'

/**
 * The openai dialect's errors: OpenAI's `{"error":{"message","type","code"}}`
 * — and Google's, which Gemini's OpenAI-compatible endpoint
 * (generativelanguage.googleapis.com/v1beta/openai) answers with: a
 * one-element array of `{"error":{"code":400,"message","status":
 * "INVALID_ARGUMENT","details":[…]}}` (verbatim in continuedev/continue#8516,
 * n4ze3m/page-assist#406). Read as OpenAI's, that body named nothing: a bad
 * key (`API_KEY_INVALID`) was the status's `bad_request` — the call failed
 * as the client's fault, no fallback — and every message was the raw JSON.
 * Gemini's own reader knows it: its statuses, `RetryInfo`, `QuotaFailure`.
 */
export function normalizeOpenAIError(input: ErrorInput): NormalizedError | undefined {
  return classifyError(input, readCompatibleError)
}

/** OpenAI reports a failure mid-stream as a data frame holding `{"error":{…}}`. */
export function normalizeOpenAIStreamError(frame: StreamErrorInput): NormalizedError | undefined {
  return classifyStreamError(frame, readCompatibleError)
}

function readCompatibleError(json: unknown, text: string, status: number): BodyVerdict | undefined {
  if (isGoogleError(json)) return readGeminiError(json, text, status)
  const verdict = readOpenAIError(json) ?? readOpenAIError(flatError(json))
  // A 400 `invalid_prompt`: "Invalid prompt: your prompt was flagged as
  // potentially violating our usage policy" (a reasoning model's safety
  // check). As the status's `bad_request` it reached a gateway's client as
  // an invalid request, not the refusal it is. Only on an error status:
  // after a 200 the label is read as blaming the request without naming
  // what (`requestFault`), as vLLM's are.
  if (verdict?.providerCode === 'invalid_prompt' && verdict.kind === undefined && status >= 400) {
    return { ...verdict, kind: 'content_policy' }
  }
  return verdict
}

/**
 * vLLM before 0.10.1 (vllm-project/vllm#22099), SGLang's chat endpoint,
 * LMDeploy, FastChat: OpenAI's error fields at the top level, marked
 * `"object": "error"` (vllm-project/vllm#12886). Read as OpenAI's nested
 * body; unread, an over-long prompt was `bad_request` with the raw JSON as
 * its message, and the prompt-too-long recovery never ran.
 */
function flatError(json: unknown): unknown {
  if (getString(json, 'object') !== 'error' || getRecord(json, 'error') !== undefined)
    return undefined
  if (getString(json, 'message') === undefined) return undefined
  return { error: json }
}

/**
 * Google's shape: a numeric `code` and a google.rpc `status` name
 * (`INVALID_ARGUMENT`), no OpenAI `type` — alone or first in an array.
 */
function isGoogleError(json: unknown): boolean {
  const root = Array.isArray(json) ? json[0] : json
  const error = getRecord(root, 'error')
  return (
    error !== undefined &&
    typeof error.code === 'number' &&
    typeof error.status === 'string' &&
    /^[A-Z_]+$/.test(error.status) &&
    error.type === undefined
  )
}
