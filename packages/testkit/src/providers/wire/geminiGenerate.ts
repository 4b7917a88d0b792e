import { frameJson } from './frameJson.js'
import { type MadeUpLogprob, madeUpLogprobs } from './madeUpLogprobs.js'
import { RawJson, stringifyWithRaw } from './RawJson.js'
import type { AnswerPlan, Frame, WireFormat } from './WireFormat.js'

const FINISH = {
  stop: 'STOP',
  length: 'MAX_TOKENS',
  tool_calls: 'STOP',
  content_filter: 'SAFETY',
} as const

/**
 * Gemini `generateContent` and `streamGenerateContent?alt=sse`. Streamed
 * chunks are whole `GenerateContentResponse` objects separated by `\r\n\r\n`
 * (Gemini's framing, unlike the `\n\n` of the others); thoughts are parts with
 * `thought: true`. The signature rides as `thoughtSignature` where Gemini 3
 * puts it (ai.google.dev/gemini-api/docs/thought-signatures): on the first
 * `functionCall` part of an answer with function calls ("the first function
 * call part … will have a signature"; parallel calls after it have none),
 * text before it or not; and "model responses without a function call will
 * return a thought signature inside the last part returned by the model" —
 * the last text part (streamed: the last text chunk), or with no text the
 * last thought. Both forms alike. The fake used to sign the first text part
 * even beside function calls, so a client that looked for the signature on
 * the call (where Gemini 3 checks it when the history comes back: "Function
 * call is missing a thought_signature") passed against the fake only.
 */
export const geminiGenerate: WireFormat = {
  toolIdPrefix: 'fc_',
  idPrefix: '',
  streamContentType: 'text/event-stream',

  json(plan) {
    const parts: Record<string, unknown>[] = []
    if (plan.thinkingTokens.length > 0 && plan.includeThoughts === true)
      parts.push({ text: plan.thinkingTokens.join(''), thought: true })
    if (plan.textTokens.length > 0) parts.push({ text: plan.textTokens.join('') })
    const calls = wholeCalls(plan).map(functionCallPart)
    parts.push(...calls)
    // Nothing else to carry it (the thoughts not sent): an empty text part.
    if (plan.signature !== undefined && parts.length === 0) parts.push({ text: '' })
    const signed = calls[0] ?? parts.at(-1)
    if (plan.signature !== undefined && signed !== undefined)
      signed['thoughtSignature'] = plan.signature
    return response(plan, parts, usageMetadata(plan), logprobsResult(plan, plan.textTokens, 0))
  },

  frames(plan) {
    const frames: Frame[] = []
    const final = usageMetadata(plan)
    // Every chunk's usage is the running total so far (thoughts and answer
    // generated up to it), capped by the final counts a reply may set.
    let thoughts = 0
    let candidates = 0
    const chunkJson = (parts: unknown[], last: boolean, logprobs?: unknown): string =>
      stringifyWithRaw(
        response(plan, parts, last ? final : runningUsage(plan, thoughts, candidates), logprobs),
      )
    const event = (json: string) => `data: ${json}\r\n\r\n`
    const chunk = (parts: unknown[], last: boolean, logprobs?: unknown): string =>
      event(chunkJson(parts, last, logprobs))
    // Gemini sends a function call whole, in one chunk; the first one is
    // signed. Without one, the last part the model streams is.
    const calls = wholeCalls(plan).map(functionCallPart)
    const signature = calls.length === 0 ? plan.signature : undefined
    if (plan.signature !== undefined && calls[0] !== undefined)
      calls[0]['thoughtSignature'] = plan.signature
    // Thoughts not asked for are generated (paced, counted in the usage) but not sent.
    const shown = plan.includeThoughts === true
    plan.thinkingTokens.forEach((t, i) => {
      thoughts = Math.min(thoughts + 1, final.thoughtsTokenCount ?? 0)
      if (!shown) {
        frames.push({ text: '', token: true })
        return
      }
      const part: Record<string, unknown> = { text: t, thought: true }
      const last = i === plan.thinkingTokens.length - 1 && plan.textTokens.length === 0
      if (last && signature !== undefined) part['thoughtSignature'] = signature
      frames.push({ text: chunk([part], false), token: true })
    })
    // A text answer that stops (`STOP`) ends on its last text: that chunk
    // carries the finishReason and the final usage, no closing chunk after
    // it — raw gemini-2.5-flash and -flash-lite `alt=sse` streams end
    // `{"content": {"parts": [{"text": "3\n4\n5"}],"role": "model"},
    // "finishReason": "STOP","index": 0}` (envoyproxy/ai-gateway#2107: "when
    // the finish_reason is stop, the content is not empty"). The fake closed
    // every stream with a chunk of no parts, so a client that took the
    // finishing chunk's parts for empty — and dropped the answer's last
    // words — passed against it only. That closing chunk stays where Gemini
    // sends one: after `MAX_TOKENS` ("the content would be empty", ibid.),
    // with the function calls, and a safety block's. And after a stop
    // sequence: its tokens are generated after the last text sent, before
    // the finish (withStopTokens), so the last text cannot carry the STOP
    // without waiting for them — it went out a token's time late each.
    const endsOnText =
      plan.textTokens.length > 0 &&
      calls.length === 0 &&
      plan.finishReason === 'stop' &&
      (plan.unsentStopTokens ?? 0) === 0
    plan.textTokens.forEach((t, i) => {
      candidates = Math.min(candidates + 1, final.candidatesTokenCount ?? 0)
      const part: Record<string, unknown> = { text: t }
      const last = i === plan.textTokens.length - 1
      if (last && signature !== undefined) part['thoughtSignature'] = signature
      // Each chunk's `logprobsResult` holds the steps of its own tokens.
      const logprobs = logprobsResult(plan, [t], i)
      const sent = chunkJson([part], false, logprobs)
      if (last && endsOnText) {
        const finished = chunkJson([part], true, logprobs)
        frames.push({
          text: event(finished),
          token: true,
          finish: true,
          unfinished: { finished, sent },
        })
      } else frames.push({ text: event(sent), token: true })
    })
    if (endsOnText) return frames
    // A signature with no part to ride on (thoughts not sent, no text): an empty text part.
    const unsigned =
      signature !== undefined && !shown && plan.textTokens.length === 0
        ? [{ text: '', thoughtSignature: signature }]
        : []
    frames.push({
      text: chunk([...unsigned, ...calls], true),
      token: calls.length > 0,
      finish: true,
    })
    return frames
  },

  errorFrame(error) {
    return `data: ${frameJson(error.body)}\r\n\r\n`
  },
}

/**
 * The candidate of an answer the safety filters blocked: no `content` at
 * all — what was generated is withheld, though counted and billed
 * (`candidatesTokenCount`) — with `finishReason: "SAFETY"` and the
 * candidate's `safetyRatings`, the category that blocked it `blocked:
 * true` (a real answer quoted in CherryHQ/cherry-studio#664: no
 * `content`, `"probability": "HIGH", "blocked": true`, `candidatesTokenCount:
 * 16`; epam/ai-dial-adapter-vertexai#149, "The Candidate content is usually
 * missing"; Vertex's `FinishReason.SAFETY`: "When streaming the
 * Candidate.content will be empty if content filters blocked the output").
 * Streamed, the text before the block went out; the last chunk is this.
 * The fake sent the scripted text as the answer's, so a client that used
 * the text of a blocked answer, or read `candidate.content.parts` as
 * always there, passed against it only.
 */
function blockedCandidate(): Record<string, unknown> {
  return {
    finishReason: 'SAFETY',
    index: 0,
    safetyRatings: [
      { category: 'HARM_CATEGORY_HATE_SPEECH', probability: 'NEGLIGIBLE' },
      { category: 'HARM_CATEGORY_DANGEROUS_CONTENT', probability: 'HIGH', blocked: true },
      { category: 'HARM_CATEGORY_HARASSMENT', probability: 'NEGLIGIBLE' },
      { category: 'HARM_CATEGORY_SEXUALLY_EXPLICIT', probability: 'NEGLIGIBLE' },
    ],
  }
}

/**
 * `args` is the scripted `argumentsJson` as written (an integer past 2^53
 * kept whole). A call without arguments (`{}`) has no `args` at all:
 * `FunctionCall.args` is an optional `Struct` (ai.google.dev/api/caching#FunctionCall),
 * left out of the JSON when the model sets none, so a no-argument call is
 * `{"functionCall":{"name":"beep"}}` (googleapis/js-genai's own test answer;
 * JetBrains/koog#2147, anomalyco/opencode#43111: clients that read `args` as
 * always there failed on it). The fake sent `args: {}`, so such a client
 * passed against it only.
 */
function functionCallPart(call: AnswerPlan['toolCalls'][number]): Record<string, unknown> {
  if (call.argumentsJson === NO_ARGUMENTS) return { functionCall: { name: call.name } }
  return {
    functionCall: { name: call.name, args: new RawJson(call.argumentsJson, "Gemini's `args`") },
  }
}

/**
 * Gemini sends a function call whole, in one part: a call the request's
 * `maxOutputTokens` cut inside its arguments is not sent at all.
 */
function wholeCalls(plan: AnswerPlan): AnswerPlan['toolCalls'] {
  return plan.toolCalls.filter((call) => call.cut !== true)
}

/** The arguments of a call that takes none (`arguments: {}`, or none scripted). */
const NO_ARGUMENTS = '{}'

/**
 * Every candidate is numbered, `"index": 0`, after its `finishReason`: in the
 * unstreamed answer and on every streamed chunk, the last included. Raw
 * `alt=sse` chunks from the current models say so — gemini-2.5-flash
 * (`{"candidates": [{"content": {"parts": [{"text": "1\n2\n"}],"role":
 * "model"},"index": 0}], …}`, then `…"finishReason": "STOP","index": 0}]`),
 * gemini-2.5-flash-lite, gemini-3-flash-preview and gemini-3.1-pro-preview
 * alike. gemini-1.5 and 2.0 streams left it out (discourse/discourse-ai
 * spec/lib/completions/endpoints/gemini_spec.rb, gemini-1.5-pro-002); the
 * fake follows the current models, as it does for `candidatesTokensDetails`.
 */
function response(plan: AnswerPlan, parts: unknown[], usage: UsageMetadata, logprobs?: unknown) {
  const { final: _, ...usageMetadata } = usage
  if (usage.final && plan.finishReason === 'content_filter') {
    return {
      candidates: [blockedCandidate()],
      usageMetadata,
      modelVersion: plan.model,
      responseId: plan.id,
    }
  }
  // A chunk with no parts has no `parts` key at all (proto3 JSON leaves an
  // empty repeated field out): the closing "done + usage" chunk of a stream
  // is `content: {role: 'model'}` with the finishReason — pydantic/pydantic-ai#2631
  // (a logged Gemini candidate `Content(role='model')`, STOP, no parts) and
  // agentjido/req_llm#638. Never `parts: []`.
  const content = parts.length > 0 ? { parts, role: 'model' } : { role: 'model' }
  const candidate: Record<string, unknown> = { content }
  if (usage.final) candidate['finishReason'] = FINISH[plan.finishReason]
  if (logprobs !== undefined) candidate['logprobsResult'] = logprobs
  candidate['index'] = 0
  return {
    candidates: [candidate],
    usageMetadata,
    modelVersion: plan.model,
    responseId: plan.id,
  }
}

/**
 * Thoughts are counted apart from the answer: `candidatesTokenCount` excludes
 * them, `thoughtsTokenCount` holds them, and `totalTokenCount` is the sum of
 * all three (ai.google.dev/api/generate-content#UsageMetadata; e.g. a real
 * gemini-3-flash answer: prompt 34, candidates 418, thoughts 438, total 890).
 * Keys in the order Gemini writes them (its proto's field order).
 *
 * A zero is left out here too, as proto3 JSON leaves every zero out: an
 * answer with no visible token — thoughts that used `maxOutputTokens` up,
 * an empty text — has no `candidatesTokenCount` at all (gemini-2.5-flash's
 * `MAX_TOKENS` answers with `thoughtsTokenCount: 8191` and no candidates
 * count; vercel/ai#3108, BerriAI/litellm#4270: clients that read it as
 * always there failed on it). The fake sent `candidatesTokenCount: 0`, so
 * such a client passed against it only.
 */
function usageMetadata(plan: AnswerPlan): UsageMetadata {
  const thoughts = Math.min(plan.thinkingTokens.length, plan.outputTokens)
  const candidates = plan.outputTokens - thoughts
  return {
    final: true,
    ...counted('promptTokenCount', plan.inputTokens),
    ...counted('candidatesTokenCount', candidates),
    ...counted('totalTokenCount', plan.inputTokens + plan.outputTokens),
    ...promptDetails(plan),
    ...counted('thoughtsTokenCount', thoughts),
  }
}

/**
 * `{ [key]: count }`, or nothing for a zero: proto3 JSON leaves every zero
 * out — a prompt of no token has no `promptTokenCount` (nor
 * `totalTokenCount`, nor a `promptTokensDetails` entry), as an answer of
 * none has no `candidatesTokenCount`.
 */
function counted<K extends string>(key: K, count: number): { [k in K]?: number } {
  return count > 0 ? ({ [key]: count } as { [k in K]: number }) : {}
}

/**
 * The prompt's counts by modality, on every chunk and answer: the prompt is
 * all text here (`promptTokensDetails: [{"modality": "TEXT", "tokenCount":
 * …}]`, the whole `promptTokenCount`), and for a cache read its cached part
 * (`cachedContentTokenCount`, which `promptTokenCount` counts) by modality
 * too (`cacheTokensDetails`). Raw gemini-2.5-flash `alt=sse` chunks carry
 * it on every chunk, the first included (`"promptTokenCount": 8,
 * "candidatesTokenCount": 3, "totalTokenCount": 11, "promptTokensDetails":
 * [{"modality": "TEXT","tokenCount": 8}]`), as do gemini-2.5-flash and
 * gemini-3.1-flash-lite answers; `ModalityTokenCount` in
 * ai.google.dev/api/generate-content#UsageMetadata. No
 * `candidatesTokensDetails`: gemini-1.5 and 2.0 sent it, 2.5 and later do not
 * for a text answer.
 */
function promptDetails(plan: AnswerPlan): Partial<UsageMetadata> {
  const cached = plan.cachedInputTokens
  return {
    ...(cached > 0 ? { cachedContentTokenCount: cached } : {}),
    // A list of no entry is left out, as proto3 JSON leaves an empty repeated field.
    ...(plan.inputTokens > 0
      ? { promptTokensDetails: [{ modality: 'TEXT', tokenCount: plan.inputTokens }] }
      : {}),
    ...(cached > 0 ? { cacheTokensDetails: [{ modality: 'TEXT', tokenCount: cached }] } : {}),
  }
}

/**
 * A chunk before the last: the counts so far, as Gemini sends them — a
 * real gemini-2.5-flash thought chunk says `"promptTokenCount": 2,
 * "totalTokenCount": 73, "thoughtsTokenCount": 71`, a gemini-3-flash text
 * chunk `"candidatesTokenCount": 10, "totalTokenCount": 612,
 * "thoughtsTokenCount": 597` — zeros left out (proto3 JSON). They were the
 * prompt's alone: a client that added the chunks' counts up, or billed a
 * stream cut mid-answer by them, saw no output either way.
 */
function runningUsage(plan: AnswerPlan, thoughts: number, candidates: number): UsageMetadata {
  return {
    final: false,
    ...counted('promptTokenCount', plan.inputTokens),
    ...counted('candidatesTokenCount', candidates),
    ...counted('totalTokenCount', plan.inputTokens + thoughts + candidates),
    ...promptDetails(plan),
    ...counted('thoughtsTokenCount', thoughts),
  }
}

interface UsageMetadata {
  /** The last chunk's: it carries the finish reason. Not sent. */
  final: boolean
  promptTokenCount?: number
  candidatesTokenCount?: number
  totalTokenCount?: number
  cachedContentTokenCount?: number
  promptTokensDetails?: ModalityTokenCount[]
  cacheTokensDetails?: ModalityTokenCount[]
  thoughtsTokenCount?: number
}

interface ModalityTokenCount {
  modality: 'TEXT'
  tokenCount: number
}

/**
 * The candidate's `logprobsResult` for `tokens` (the answer's text tokens
 * from `first` on), when the request set `responseLogprobs`
 * (ai.google.dev/api/generate-content#LogprobsResult): per decoding step
 * the chosen token (`chosenCandidates`) and, when `logprobs` asked for
 * some, that many top candidates (`topCandidates[].candidates`, the chosen
 * one first, sorted by log probability). The figures are made up but fixed:
 * the same answer gives the same ones. Thoughts have none.
 */
function logprobsResult(
  plan: AnswerPlan,
  tokens: readonly string[],
  first: number,
): Record<string, unknown> | undefined {
  if (plan.logprobs === undefined || tokens.length === 0) return undefined
  const steps = madeUpLogprobs(tokens, first, plan.logprobs)
  return {
    ...(plan.logprobs > 0
      ? { topCandidates: steps.map((step) => ({ candidates: step.top.map(candidate) })) }
      : {}),
    chosenCandidates: steps.map((step) => candidate(step.chosen)),
  }
}

/** One `LogprobsResult.Candidate`: a token, an id made from it, its log probability. */
function candidate({ token, logprob }: MadeUpLogprob) {
  let tokenId = 0
  for (const char of token) tokenId = (tokenId * 31 + (char.codePointAt(0) ?? 0)) % 262_144
  return { token, tokenId, logProbability: logprob }
}
