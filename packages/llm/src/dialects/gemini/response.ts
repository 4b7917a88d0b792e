import { malformedReply, ProviderReplyError } from '../../errors/ProviderReplyError.js'
import type { ChatResponse, ContentBlock, FinishReason, Usage } from '../../types.js'
import {
  anyCount,
  countOf,
  MAX_TOKEN_COUNT,
  mapFinish,
  textOf,
  usageOf,
  withUsageDetails,
} from '../blocks.js'
import type { ResponseMeta } from '../Dialect.js'
import { GeneratedCallIds } from '../GeneratedCallIds.js'
import { markNoAnswer } from '../noAnswer.js'
import { asArray, asRecord, get, getRecord, getString, parseAnswerJson } from '../safeJson.js'
import { joinStreamedChunks } from './joinStreamedChunks.js'
import { geminiLogprobs } from './logprobs.js'
import { roundedArgs } from './roundedArgs.js'

export const GEMINI_FINISH: Readonly<Record<string, FinishReason>> = {
  STOP: 'stop',
  MAX_TOKENS: 'length',
  SAFETY: 'content_filter',
  RECITATION: 'content_filter',
  BLOCKLIST: 'content_filter',
  PROHIBITED_CONTENT: 'content_filter',
  SPII: 'content_filter',
  IMAGE_SAFETY: 'content_filter',
  // Newer reasons (js-genai `FinishReason`; Vertex AI v1 `Candidate`):
  // blocked output, and tool calls the model got wrong — not an unexplained
  // stop, which is what `unknown` told the caller (and the gateway's client).
  IMAGE_PROHIBITED_CONTENT: 'content_filter',
  IMAGE_RECITATION: 'content_filter',
  MODEL_ARMOR: 'content_filter',
  // "The token generation stopped because of using an unsupported
  // language": output blocked, as the others above.
  LANGUAGE: 'content_filter',
  MALFORMED_FUNCTION_CALL: 'error',
  UNEXPECTED_TOOL_CALL: 'error',
  TOO_MANY_TOOL_CALLS: 'error',
  MALFORMED_RESPONSE: 'error',
  MISSING_THOUGHT_SIGNATURE: 'error',
  NO_IMAGE: 'error',
  // "All other reasons that stopped the token generation" (js-genai): cut
  // short by Gemini for a reason it does not give, so not a complete answer
  // and not knowingly a block — `error` (a failed attempt: retried, or the
  // next model asked, while the caller has none of it), which `unknown` was
  // not: a gateway's client read it as `stop`.
  OTHER: 'error',
  IMAGE_OTHER: 'error',
  // Gemini said nothing at all: nothing to tell. No reason, either, for
  // the no-answer rule (`saysFinished`).
  FINISH_REASON_UNSPECIFIED: 'unknown',
}

/**
 * Whether a candidate's `finishReason` says it finished: any string but
 * `FINISH_REASON_UNSPECIFIED`, the enum's "Default value. This value is
 * unused." (ai.google.dev `FinishReason`) — no more a reason than none. A
 * candidate with it and no content was an empty success, `unknown`; it is
 * no answer (`markNoAnswer`), as one without `finishReason` is.
 */
export function saysFinished(reason: unknown): boolean {
  return typeof reason === 'string' && reason !== 'FINISH_REASON_UNSPECIFIED'
}

/**
 * Thoughts are billed as output: `outputTokens` counts them, and
 * `reasoningTokens` is them alone (`thoughtsTokenCount`). The prompt count
 * already includes cached content; `cachedContentTokenCount` is that part
 * (`cachedInputTokens`), as OpenAI's `cached_tokens` is of its `prompt_tokens`.
 * What a server-side tool (Search grounding, URL context, code execution)
 * fed back to the model is input too, billed as input, and counted apart
 * from the prompt (`toolUsePromptTokenCount`; `totalTokenCount` is prompt +
 * candidates + tool-use prompt + thoughts): left out, a grounded answer
 * billed for 18 480 input tokens was charged for its 151 prompt tokens.
 */
export function geminiUsage(metadata: unknown): Usage {
  // Each count read as one (a negative or NaN one as none), and the sums
  // clamped: a candidates count of -100 took 100 off the thoughts, and two
  // of 1e308 summed to Infinity, read as an output of 0.
  const thoughts = get(metadata, 'thoughtsTokenCount')
  const output = Math.min(
    (countOf(get(metadata, 'candidatesTokenCount')) ?? 0) + (countOf(thoughts) ?? 0),
    MAX_TOKEN_COUNT,
  )
  const input = Math.min(
    (countOf(get(metadata, 'promptTokenCount')) ?? 0) +
      (countOf(get(metadata, 'toolUsePromptTokenCount')) ?? 0),
    MAX_TOKEN_COUNT,
  )
  return withUsageDetails(
    usageOf(input, output),
    get(metadata, 'cachedContentTokenCount'),
    thoughts,
  )
}

/** Whether Gemini's `usageMetadata` had any count `geminiUsage` reads. */
export function geminiUsageReported(metadata: unknown): boolean {
  return anyCount(
    get(metadata, 'promptTokenCount'),
    get(metadata, 'candidatesTokenCount'),
    get(metadata, 'thoughtsTokenCount'),
    get(metadata, 'toolUsePromptTokenCount'),
  )
}

/**
 * Parts → blocks. `thought: true` parts are thinking; a `thoughtSignature`
 * on any other part becomes a signed, empty thinking block in front of it,
 * so `buildGeminiRequest` can put it back where it was. Calls without an id
 * get one from `ids`, unique across responses (`GeneratedCallIds`). A call
 * whose `args` parsing rounded keeps them as written (`rounded`, from
 * `roundedArgs`) as `rawArguments`.
 */
export function geminiParts(
  parts: unknown,
  ids: GeneratedCallIds,
  rounded?: ReadonlyMap<object, string>,
): ContentBlock[] {
  const out: ContentBlock[] = []
  for (const part of asArray(parts)) {
    const signature = getString(part, 'thoughtSignature')
    const text = getString(part, 'text')
    if (get(part, 'thought') === true) {
      out.push({ type: 'thinking', thinking: text ?? '', signature })
      continue
    }
    if (signature !== undefined) out.push({ type: 'thinking', thinking: '', signature })
    const call = getRecord(part, 'functionCall')
    if (call !== undefined) {
      const args = getRecord(call, 'args') ?? {}
      const written = rounded?.get(args)
      out.push({
        type: 'tool_call',
        id: getString(call, 'id') ?? ids.next(),
        name: getString(call, 'name') ?? '',
        arguments: args,
        ...(written === undefined ? {} : { rawArguments: written }),
      })
    } else if (text !== undefined) out.push({ type: 'text', text })
  }
  return out
}

export function geminiFinish(reason: unknown, content: readonly ContentBlock[]): FinishReason {
  const mapped = mapFinish(GEMINI_FINISH, reason)
  // Gemini says STOP after a function call; callers need to know a tool is wanted.
  return mapped === 'stop' && content.some((b) => b.type === 'tool_call') ? 'tool_calls' : mapped
}

/**
 * `GenerateContentResponse` (its text, or that parsed) → normalised response
 * (the streamed array form too: `joinStreamedChunks`). No candidate means no
 * answer: it throws. A call whose `args` parsing rounded keeps the text as
 * written as `rawArguments` (`roundedArgs`), when the text is at hand.
 */
export function parseGeminiResponse(body: unknown, meta: ResponseMeta = {}): ChatResponse {
  const parsed = typeof body === 'string' ? parseAnswerJson(body) : body
  const rounded = roundedArgs(typeof body === 'string' ? body : meta.text, parsed)
  const json = Array.isArray(parsed) ? joinStreamedChunks(parsed) : parsed
  // A candidate that is no object (`candidates: [null]`) is no candidate:
  // read as one, it was an empty success — no text, no finish reason, billed.
  const candidate = asRecord(asArray(get(json, 'candidates'))[0])
  if (candidate === undefined) {
    const blockReason = getString(getRecord(json, 'promptFeedback'), 'blockReason')
    if (blockReason === undefined) throw malformedReply('Gemini response (no candidates)')
    throw new ProviderReplyError({
      kind: 'content_policy',
      retryable: false,
      status: 200,
      providerCode: `blockReason:${blockReason}`,
      message: `prompt blocked: ${blockReason}`,
    })
  }
  const content = geminiParts(
    get(getRecord(candidate, 'content'), 'parts'),
    new GeneratedCallIds(),
    rounded,
  )
  const metadata = get(json, 'usageMetadata')
  const reason = get(candidate, 'finishReason')
  const response: ChatResponse = {
    id: getString(json, 'responseId') ?? '',
    model: getString(json, 'modelVersion') ?? '',
    provider: 'gemini',
    content,
    text: textOf(content),
    finishReason: geminiFinish(reason, content),
    usage: geminiUsage(metadata),
    // Zeros that mean "not said" are told apart (`ChatResponse.usageReported`).
    ...(geminiUsageReported(metadata) ? {} : { usageReported: false as const }),
  }
  if (response.finishReason === 'error') response.providerFinishReason = String(reason)
  // Sent when `responseLogprobs` asked (`extra.logprobs`), in OpenAI's shape.
  const logprobs = geminiLogprobs(get(candidate, 'logprobsResult'))
  if (logprobs !== undefined) response.logprobs = logprobs
  // Any string but the unused default is a reason, as in a stream's chunk.
  return markNoAnswer(response, saysFinished(reason))
}
