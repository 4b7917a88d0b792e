import { malformedReply, ProviderReplyError } from '../../errors/ProviderReplyError.js'
import type { Logprobs, StreamEvent } from '../../types.js'
import type { StreamParser } from '../Dialect.js'
import { GeneratedCallIds } from '../GeneratedCallIds.js'
import { isBlank } from '../isBlank.js'
import { asArray, asRecord, get, getRecord, getString, parseAnswerJson } from '../safeJson.js'
import { normalizeGeminiStreamError } from './errors.js'
import { geminiLogprobs } from './logprobs.js'
import {
  geminiFinish,
  geminiParts,
  geminiUsage,
  geminiUsageReported,
  saysFinished,
} from './response.js'
import { roundedArgs } from './roundedArgs.js'

/**
 * `streamGenerateContent?alt=sse` events → normalised events. Every event is
 * a whole `GenerateContentResponse` holding the next parts; a function call
 * arrives whole, so its arguments are one delta (the chunk's text of them
 * where parsing rounded an integer in them, or read `1e999` as Infinity:
 * `roundedArgs`), and its own
 * `index` (0, 1, … in the answer). The chunk with a
 * `finishReason` (which carries the final usage) ends the stream: Gemini has
 * no `[DONE]`.
 */
export function createGeminiStreamParser(): StreamParser {
  const ids = new GeneratedCallIds()
  /** The function calls so far: the next one's `StreamEvent` `index`. */
  let toolCount = 0
  /** Text, thinking or a tool call came: an unspecified finish reason then ends an answer. */
  let sawContent = false
  let done = false
  /** The latest chunk's `usageMetadata` with counts: every chunk carries the running totals. */
  let latestUsage: unknown
  /** The first `modelVersion` said: the model answering (every chunk repeats it). */
  let model: string | undefined
  /** The first `responseId` said (every chunk repeats it): named before the finish (`StreamParser.responseId`). */
  let responseId: string | undefined
  /** Every chunk's `logprobsResult` (each its own tokens'), joined for the finish. */
  let logprobs: Logprobs | undefined

  return {
    get done() {
      return done
    },
    parseStreamEvent(message) {
      const error = normalizeGeminiStreamError(message)
      if (error !== undefined) throw new ProviderReplyError(error)
      // `data:` with nothing after it (a proxy's keep-alive) is an event with
      // empty data, as SSE dispatches it: no chunk, not an unreadable one.
      if (isBlank(message.data)) return []
      const chunk = parseAnswerJson(message.data)
      if (asRecord(chunk) === undefined) throw malformedReply('Gemini stream chunk')
      model ??= getString(chunk, 'modelVersion') || undefined
      responseId ??= getString(chunk, 'responseId') || undefined
      const chunkUsage = get(chunk, 'usageMetadata')
      if (geminiUsageReported(chunkUsage)) latestUsage = chunkUsage
      const candidate = asArray(get(chunk, 'candidates'))[0]
      const out: StreamEvent[] = []
      const parts = get(getRecord(candidate, 'content'), 'parts')
      for (const block of geminiParts(parts, ids, roundedArgs(message.data, chunk))) {
        if (block.type === 'text') {
          if (block.text !== '') sawContent = true
          out.push({ type: 'text', text: block.text })
        } else if (block.type === 'thinking') {
          if (block.thinking !== '') {
            sawContent = true
            out.push({ type: 'thinking', thinking: block.thinking })
          }
          if (block.signature) out.push({ type: 'signature', signature: block.signature })
        } else if (block.type === 'tool_call') {
          sawContent = true
          out.push({
            type: 'tool_call',
            id: block.id,
            name: block.name,
            // As the model wrote them where parsing rounded an integer in
            // them, or read a number JSON writes as null (`roundedArgs`).
            argumentsDelta: block.rawArguments ?? JSON.stringify(block.arguments),
            // Every part is a call of its own, whole: two that name one `id`
            // are two calls, not one with both arguments joined.
            index: toolCount++,
          })
        }
      }
      logprobs = geminiLogprobs(get(candidate, 'logprobsResult'), logprobs)
      const reason = get(candidate, 'finishReason')
      if (typeof reason === 'string' && !done) {
        done = true
        // `FINISH_REASON_UNSPECIFIED` (the unused default: no reason) with
        // no content in the stream: it ends, with no finish — no answer,
        // left for the caller to refuse, as OpenAI's `[DONE]` alone is. It
        // was an empty success, `unknown`.
        if (!saysFinished(reason) && !sawContent) return out
        const finishReason = geminiFinish(
          reason,
          toolCount > 0 ? [{ type: 'tool_call', id: '', name: '', arguments: {} }] : [],
        )
        const metadata = get(chunk, 'usageMetadata')
        out.push({
          type: 'finish',
          finishReason,
          providerFinishReason: finishReason === 'error' ? reason : undefined,
          // None when the chunk had no counts: zeros would read as a report of none used.
          usage: geminiUsageReported(metadata) ? geminiUsage(metadata) : undefined,
          id: getString(chunk, 'responseId'),
          ...(model === undefined ? {} : { model }),
          ...(logprobs === undefined ? {} : { logprobs }),
        })
      }
      return out
    },
    end: () => [],
    get logprobsSoFar() {
      return logprobs
    },
    get usageSoFar() {
      return latestUsage === undefined ? undefined : geminiUsage(latestUsage)
    },
    get responseId() {
      return responseId
    },
  }
}
