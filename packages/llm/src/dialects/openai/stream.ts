import { malformedReply, ProviderReplyError } from '../../errors/ProviderReplyError.js'
import type {
  Annotation,
  FinishReason,
  Logprobs,
  NormalizedError,
  StreamEvent,
  Usage,
} from '../../types.js'
import { mapFinish } from '../blocks.js'
import type { StreamParser } from '../Dialect.js'
import type { StreamErrorInput } from '../ErrorInput.js'
import { GeneratedCallIds } from '../GeneratedCallIds.js'
import { isBlank } from '../isBlank.js'
import {
  asArray,
  asRecord,
  get,
  getCode,
  getRecord,
  getString,
  parseAnswerJson,
} from '../safeJson.js'
import { argumentsSent, argumentsWritten } from './argumentsSent.js'
import { reasoningThinking } from './reasoningText.js'
import {
  annotationsOf,
  contentParts,
  logprobsOf,
  OPENAI_FINISH,
  openAIProviderFinishReason,
  openAIUsage,
  openAIUsageReported,
} from './response.js'

/**
 * `chat.completion.chunk` events → normalised events. Tool-call deltas name
 * the call only in their first chunk (later ones carry just `index`, or
 * nothing at all from some servers), so the parser remembers each call's id
 * and name. The finish is held back until
 * usage arrives (OpenAI sends it in a last chunk with no choices) or the
 * stream ends with `[DONE]`, so a caller sees exactly one `finish`, with usage.
 */
export function createOpenAIStreamParser(
  normalizeStreamError: (frame: StreamErrorInput) => NormalizedError | undefined,
): StreamParser {
  /** Each call by its position in the answer, with whether the server named its id. */
  const tools = new Map<number, { id: string; name: string; named: boolean }>()
  /** The call each wire `index` currently continues. */
  const atIndex = new Map<number, number>()
  /** The call of the last tool-call delta: where a delta without index or id goes on. */
  let last: number | undefined
  const ids = new GeneratedCallIds()
  const byId = (id: string): number | undefined => {
    for (const [n, known] of tools) if (known.id === id) return n
    return undefined
  }
  // Some OpenAI-compatible servers (Gemini's compatibility endpoint, SGLang,
  // proxies) leave `index` out, or send null. Only a call's first delta names
  // it (an id, a function name); the argument fragments after it name nothing
  // and continue that call — a new call per fragment would split one call's
  // arguments over calls with no name. Others (Ollama, SGLang, LiteLLM) give
  // every parallel call `index: 0`, each with its own id: a delta whose id is
  // not the one its index holds starts a call (or goes back to the call of
  // that id), and the deltas after it at that index continue it.
  const callOf = (call: unknown, fn: Record<string, unknown> | undefined): number => {
    const given = getCode(call, 'index')
    const id = getString(call, 'id')
    if (given !== undefined) {
      const wire = Number(given)
      const current = atIndex.get(wire)
      const known = current === undefined ? undefined : tools.get(current)
      if (current !== undefined && (!id || known?.id === id || known?.named === false))
        return current
      // An index not seen before is a call of its own, whatever its id: a
      // server that gives two parallel calls one id (or reuses one) had the
      // second's deltas joined to the first (one call, `{"x":1}{"y":2}`).
      const n = current === undefined ? tools.size : ((id ? byId(id) : undefined) ?? tools.size)
      atIndex.set(wire, n)
      return n
    }
    if (id) return byId(id) ?? tools.size
    if (getString(fn, 'name') || last === undefined) return tools.size
    return last
  }
  let finishReason: FinishReason | undefined
  // The finish reason as sent, when it mapped to `error` or is a full window (`ChatResponse.providerFinishReason`).
  let providerFinishReason: string | undefined
  let usage: Usage | undefined
  let id: string | undefined
  let model: string | undefined
  let fingerprint: string | undefined
  let tier: string | undefined
  const annotations: Annotation[] = []
  let logprobs: Logprobs | undefined
  let finished = false
  let done = false
  /** Text, thinking or a tool call came: `[DONE]` then ends an answer, not an empty stream. */
  let sawContent = false

  const flush = (): StreamEvent[] => {
    if (finished || finishReason === undefined) return []
    finished = true
    const finish: StreamEvent & { type: 'finish' } = { type: 'finish', finishReason, usage, id }
    if (providerFinishReason !== undefined) finish.providerFinishReason = providerFinishReason
    if (model !== undefined) finish.model = model
    if (fingerprint !== undefined) finish.systemFingerprint = fingerprint
    if (tier !== undefined) finish.serviceTier = tier
    if (annotations.length > 0) finish.annotations = annotations
    if (logprobs !== undefined) finish.logprobs = logprobs
    return [finish]
  }

  return {
    get done() {
      return done
    },
    // A finish reason came, its usage (or `[DONE]`) not yet: a server that
    // ignores `stream_options.include_usage` may send neither.
    get finishing() {
      return finishReason !== undefined && !finished
    },
    // The usage chunk's counts, once one came (OpenAI sends it after the
    // finish reason; vLLM's `continuous_usage_stats` on every chunk, a
    // running count): what a stream cut before its `finish`, or one that
    // ends with no answer, is charged by.
    get usageSoFar() {
      return usage
    },
    get responseId() {
      return id
    },
    get serviceTier() {
      return tier
    },
    get logprobsSoFar() {
      return logprobs
    },
    parseStreamEvent(message) {
      const error = normalizeStreamError(message)
      if (error !== undefined) throw new ProviderReplyError(error)
      // `data:` with nothing after it (a proxy's keep-alive) is an event with
      // empty data, as SSE dispatches it: no chunk, not an unreadable one.
      if (isBlank(message.data)) return []
      if (message.data.trim() === '[DONE]') {
        done = true
        // The provider's end marker after an answer whose chunks named no
        // finish reason (a compatible server that leaves it out): the answer
        // is whole, as a whole answer without one is, so its finish goes out
        // (`unknown`), with the usage it held. Without it, the stream ended
        // with neither a finish nor an error: the usage was dropped and a
        // gateway's client got an answer with no `finish_reason` chunk
        // (openai-node: "missing finish_reason for choice 0"). Without
        // content either (`[DONE]` alone, after a role-only chunk or a usage
        // chunk) it is no answer: no finish, left for the caller to refuse
        // (it was an empty success, `unknown`).
        if (finishReason === undefined && sawContent) finishReason = 'unknown'
        return flush()
      }
      const chunk = parseAnswerJson(message.data)
      if (asRecord(chunk) === undefined) throw malformedReply('stream chunk')
      // `""` is no id: Azure OpenAI's first chunk (its prompt filter
      // results, no choices) says `"id": ""`, the chunks after it the real
      // one. Kept, the answer had no id and its record no `responseId`.
      id ??= getString(chunk, 'id') || undefined
      // Every chunk repeats them (a usage chunk may carry them alone): the first one said is kept.
      model ??= getString(chunk, 'model') || undefined
      fingerprint ??= getString(chunk, 'system_fingerprint') || undefined
      tier ??= getString(chunk, 'service_tier') || undefined
      const out: StreamEvent[] = []
      for (const choice of asArray(get(chunk, 'choices')).slice(0, 1)) {
        const delta = getRecord(choice, 'delta')
        const reasoning = reasoningThinking(delta)
        if (reasoning) out.push(reasoning)
        // A string, or an array of text and thinking parts (`contentParts`).
        const parts = contentParts(get(delta, 'content'))
        if (parts.thinking) out.push({ type: 'thinking', thinking: parts.thinking })
        if (parts.text) out.push({ type: 'text', text: parts.text })
        // A refusal (structured outputs) streams as `delta.refusal` with no
        // content (openai-openapi `ChatCompletionStreamResponseDelta.refusal`;
        // openai-node's stream helper gathers it as `refusal.delta`). Its
        // text, marked, as the whole answer's parser gives it: read as content
        // only, a streamed refusal was an empty answer that finished with
        // `stop`; unmarked, the gateway sent it on as `content`.
        // A refusal content part (`contentParts`) is the same refusal.
        const refusal = getString(delta, 'refusal') || parts.refusal
        if (refusal) out.push({ type: 'text', text: refusal, refusal: true })
        // Citations (`url_citation`) come as `delta.annotations`, usually in
        // a chunk of their own near the end: gathered onto the finish.
        // Each chunk's tokens' log probabilities (`extra.logprobs`), joined onto the finish.
        logprobs = logprobsOf(get(choice, 'logprobs'), logprobs)
        const cited = get(delta, 'annotations')
        if (cited !== undefined && cited !== null) annotations.push(...annotationsOf(cited))
        const calls = asArray(get(delta, 'tool_calls'))
        // The chunk's text, for arguments a server sent as an object (`argumentsSent`).
        const written = calls.length === 0 ? undefined : argumentsWritten(message.data, 'delta')
        for (const [index, call] of calls.entries()) {
          const fn = getRecord(call, 'function')
          const n = callOf(call, fn)
          last = n
          let known = tools.get(n)
          if (known === undefined) {
            const given = getString(call, 'id')
            known = {
              // One unique across turns when the server sends none (`GeneratedCallIds`).
              id: given || ids.next(),
              name: getString(fn, 'name') ?? '',
              named: Boolean(given),
            }
            tools.set(n, known)
          } else if (known.name === '') {
            // The name after the opening delta (`name: ""` or none there,
            // the name with a later one: vercel/ai #14722): taken, or the
            // call was named "" — no tool matches it, no provider takes it back.
            known.name = getString(fn, 'name') ?? ''
          }
          // Fields spelled out: on Node 20 a field after a spread costs ~0.4 µs, per delta.
          out.push({
            type: 'tool_call',
            id: known.id,
            name: known.name,
            argumentsDelta: argumentsSent(get(fn, 'arguments'), () => written?.(index)),
            index: n,
          })
        }
        const reason = get(choice, 'finish_reason')
        // `""` is no reason (some compatible servers send it on every chunk):
        // read as one, with usage on every chunk too, it ended the answer at
        // its first chunk.
        if (out.length > 0) sawContent = true
        if (reason !== undefined && reason !== null && reason !== '') {
          finishReason = mapFinish(OPENAI_FINISH, reason)
          providerFinishReason = openAIProviderFinishReason(finishReason, reason)
        }
      }
      const u = getRecord(chunk, 'usage')
      // A usage with no counts (`{}`, only `total_tokens`) is none, as in a whole answer.
      if (u !== undefined && openAIUsageReported(u)) usage = openAIUsage(u)
      if (finishReason !== undefined && usage !== undefined) out.push(...flush())
      return out
    },
    end: flush,
  }
}
