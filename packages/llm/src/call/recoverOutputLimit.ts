import { ANTHROPIC_WINDOW_FULL } from '../dialects/anthropic/response.js'
import { refusalOf } from '../dialects/blocks.js'
import { OPENAI_WINDOW_FULL } from '../dialects/openai/response.js'
import { isBudgetExceeded } from '../errors/BudgetExceededError.js'
import { isInvalidChatRequest } from '../errors/InvalidChatRequestError.js'
import { isModelUnavailable } from '../errors/ModelUnavailableError.js'
import { OutputTruncatedError } from '../errors/OutputTruncatedError.js'
import { isRateLimited } from '../errors/RateLimitedError.js'
import { isRequestRejected } from '../errors/RequestRejectedError.js'
import type { ChatRequest, ChatResponse, ContentBlock, Usage } from '../types.js'
import { outputTypeOf } from './outputTypeOf.js'
import { tooBig } from './tooBig.js'
import { withoutCutCall } from './withoutCutCall.js'

/**
 * `providerFinishReason`s of a `length` finish that is no output-cap stop:
 * the context window filled (Anthropic's `model_context_window_exceeded`;
 * on the OpenAI-compatible wire z.ai's of the same name, Mistral's `model_length`).
 */
export const WINDOW_FULL: ReadonlySet<string> = new Set([
  ANTHROPIC_WINDOW_FULL,
  ...OPENAI_WINDOW_FULL,
])

/** The user turn that asks a model cut off by its output cap to go on. */
export const CONTINUE_PROMPT = '[Output token limit hit, continue]'

/**
 * One full call's answer and the request it answered: smaller than the one
 * asked for when a prompt_too_long step (`collapse`, `compact`) shrank it.
 */
export interface Answered {
  response: ChatResponse
  request: ChatRequest
}

export interface OutputLimitOptions {
  /** Default 2 × `request.maxTokens`; 0 = never raise. */
  maxTokensCeiling?: number | undefined
  /** Default 3; 0 = surface at once. */
  maxRecoveries?: number | undefined
}

/**
 * A `max_tokens` stop, recovered in the order a production agent uses: raise
 * the cap once (×2, up to the ceiling) and ask again — unless the model
 * refuses the raised cap, which is then dropped —; then append the cut
 * answer and `CONTINUE_PROMPT` as a new turn and join the parts; after
 * `maxRecoveries` steps, `OutputTruncatedError` with everything produced.
 * A `length` stop because the context window is full (`WINDOW_FULL`) ends
 * the recovery at once, the same way, with the steps taken so far.
 * `complete(request, step)` runs one full call (retries and fallbacks
 * included); `step` names the recovery so the call can derive its own key.
 * `request` is the request `first` answered, and each step starts from the
 * request the last call answered: once a prompt_too_long step had shrunk
 * it, starting from the caller's own history again was refused again (one
 * more 400 per step, collapse and compact run again, and handed the cut
 * answer and the continue prompt to cut too). `attemptsSent()` counts the
 * call's attempts so far: read before and after a step that failed, it says
 * whether the step was sent — what its error cannot say, a fallback list's
 * error being its last model's (A sent and failed, B refused by the cost
 * budget: a `BudgetExceededError`).
 */
export async function recoverOutputLimit(
  first: ChatResponse,
  request: ChatRequest,
  options: OutputLimitOptions,
  complete: (request: ChatRequest, step: string) => Promise<Answered>,
  attemptsSent: () => number,
): Promise<ChatResponse> {
  // A whole number ≥ 0: `callModel` refuses anything else (a NaN here never stopped).
  const limit = options.maxRecoveries ?? 3
  const ceiling = options.maxTokensCeiling ?? 2 * request.maxTokens
  const steps: string[] = []
  const parts: ChatResponse[] = []
  let current = request
  let response = first
  let raised = false
  // The answer cut before the cap was raised is not part of the result, but
  // it was generated and billed: its usage still counts in the call's.
  let discarded: ChatResponse | undefined
  while (response.finishReason === 'length') {
    // Everything produced so far: what the caller gets when no step follows.
    const produced = join([...parts, response], discarded)
    // The context window is full, not the output cap reached: a raised cap
    // meets the same full window, and a "continue" turn appends the cut
    // answer and a prompt, making the context longer. Every step was a billed
    // call that could not succeed (3 by default, then this same error).
    const reason = response.providerFinishReason
    if (reason !== undefined && WINDOW_FULL.has(reason)) {
      throw new OutputTruncatedError({ response: produced, recoveries: steps, windowFull: reason })
    }
    if (steps.length >= limit) {
      throw new OutputTruncatedError({ response: produced, recoveries: steps })
    }
    const accepted = current
    // A JSON answer (`response_format` `json_object` / `json_schema`) cannot
    // be continued: under JSON mode or structured outputs every answer, the
    // continuation too, is a JSON document from its first character, so the
    // joined text (`{"bio":"Ada was{"name":…}`) parsed as nothing and came
    // back as a success (`finishReason: 'stop'`) after billed calls. The
    // raised cap (a fresh whole answer) is still tried; then what was
    // produced, as OutputTruncatedError.
    const canRaise = !raised && ceiling > current.maxTokens
    if (!canRaise && asksForJson(current)) {
      throw new OutputTruncatedError({ response: produced, recoveries: steps })
    }
    if (canRaise) {
      raised = true
      discarded = response
      current = { ...current, maxTokens: Math.min(current.maxTokens * 2, ceiling) }
      steps.push('raise-cap')
    } else {
      // The continuation goes on from the text: a call the answer was cut
      // in cannot be finished by it, and is left out (`withoutCutCall`).
      parts.push(withoutCutCall(response))
      current = {
        ...current,
        messages: [
          ...current.messages,
          { role: 'assistant', content: response.text },
          { role: 'user', content: CONTINUE_PROMPT },
        ],
      }
      steps.push('continue')
    }
    const before = attemptsSent()
    try {
      const answered = await complete(current, `${steps.length}:${steps.at(-1)}`)
      response = answered.response
      current = answered.request
    } catch (error) {
      // The raised cap refused as past the model's own output maximum
      // (Anthropic's 400 "max_tokens: 16384 > 8192, which is the maximum
      // allowed number of output tokens", OpenAI's "max_tokens is too
      // large"): a caller whose `maxTokens` is the model's maximum met it on
      // every `length` stop, the call failed with `RequestRejectedError` and
      // the cut answer already paid for was lost. The step is dropped (a
      // refusal is not billed) and the recovery goes on with the accepted cap.
      // So too a raised cap refused before anything was sent, by the cost
      // budget or by admission's TPM window: the doubled cap's tokens are
      // what did not fit, and a continuation at the accepted cap may (it
      // went unasked: the recovery ended with the cut answer, where a
      // `maxTokensCeiling: 0` call got the whole answer in two requests).
      // A continuation refused the same way still ends the recovery below.
      const sent = attemptsSent() > before
      if (
        steps.at(-1) === 'raise-cap' &&
        (refusesRaisedCap(error) || (!sent && refusedForItsSize(error)))
      ) {
        steps.pop()
        discarded = undefined
        current = accepted
        continue
      }
      // Any other step refused as a request — past the context window (a
      // continuation holds the prompt, the cut answer and the cap: the next
      // needs more room still), a cap refused in words, a fallback's 400
      // about its own tool schema (the step's call runs the whole model
      // list) — or one the cost budget cannot afford, or one admission
      // turned away before sending (a TPM window that resets after the
      // deadline: the raised cap's or the continuation's tokens beside the
      // cut answer's do not fit it): the answer produced and paid for is
      // what the caller gets, with the refusal as `cause` and the step left
      // out of `recoveries`. Thrown as it was, that answer was lost. So too
      // a step every model failed (`ModelUnavailableError`: a 429 whose wait
      // does not fit, a provider down): the limit admission refuses before
      // sending kept the answer, the same limit learned from the provider's
      // 429 lost it. The first request refused is no step: its refusal is
      // the call's. The deadline's end, the caller's abort and a content
      // policy's refusal still end the call as they are.
      if (!endsWithWhatWasProduced(error)) throw error
      steps.pop()
      throw new OutputTruncatedError({
        response: produced,
        recoveries: steps,
        cause: error,
        stepSent: sent,
      })
    }
  }
  return parts.length === 0 && discarded === undefined
    ? response
    : join([...parts, response], discarded)
}

/** Whether the request asks for JSON output (`extra.response_format` of type `json_object` or `json_schema`). */
function asksForJson(request: ChatRequest): boolean {
  return outputTypeOf(request.extra?.['response_format']) === 'json'
}

/**
 * A step's failure that ends the recovery with the answer produced so far:
 * the cost budget's or admission's refusal before sending, a refusal of the
 * request itself, or every model failing the step.
 */
export function endsWithWhatWasProduced(error: unknown): boolean {
  return (
    isBudgetExceeded(error) ||
    isRateLimited(error) ||
    isModelUnavailable(error) ||
    refusesRequest(error) ||
    // A fallback whose dialect cannot build the step's request (Gemini's
    // five stop sequences: a 400 of its own, not sent): as a provider's 400
    // about the request. Not `recovery.*`: a reducer's output the call
    // refuses ends the call as it is.
    (isInvalidChatRequest(error) && !error.field.startsWith('recovery.'))
  )
}

/**
 * A refusal before sending that a smaller request may pass: the cost
 * budget's (the estimate counts the cap), or admission's for the TPM window
 * (the cap counts in the tokens). Not a cooldown's or the RPM window's: a
 * continuation meets the same. A list's `ModelUnavailableError` whose every
 * model refused so (A too dear, B over its TPM limit) is one too: read by
 * its class alone, the same refusals dropped the cap for A alone and ended
 * the recovery for A and B.
 */
function refusedForItsSize(error: unknown): boolean {
  if (isModelUnavailable(error)) {
    return error.causes.length > 0 && error.causes.every((c) => sizeRefusal(c.cause))
  }
  // A list's budget refusal (its last model too dear) or admission's (the
  // refusal that resets soonest) names the other models' refusals in
  // `causes`: read them too. By the class alone, one model's retired key
  // beside another's budget refusal dropped the cap for one list order and
  // ended the recovery for the other.
  if (!sizeRefusal(error)) return false
  const causes = (error as { causes?: readonly { cause: unknown }[] }).causes ?? []
  return causes.every((c) => sizeRefusal(c.cause))
}

/** One model's refusal for the request's size, before sending: the budget's or the TPM window's. */
function sizeRefusal(error: unknown): boolean {
  return isBudgetExceeded(error) || (isRateLimited(error) && error.limit === 'tpm')
}

/**
 * A refusal of the raised cap as past the model's output maximum: a bad
 * request whose message names the cap and no context window (vLLM's and
 * TGI's "'max_tokens' … maximum context length is", "`inputs` tokens +
 * `max_new_tokens` must be <=" are the window, worded with the cap).
 */
export function refusesRaisedCap(error: unknown): boolean {
  return (
    isRequestRejected(error) &&
    error.kind === 'bad_request' &&
    CAP_NAMES.test(error.message) &&
    !WINDOW_WORDS.test(error.message)
  )
}

/**
 * A refusal of the request itself that no recovery step can get past: a bad
 * request, or one too large — for the context window, or for a limit
 * (`request_too_large`: admission's TPM or the provider's 429 "Request too
 * large", once `collapse`/`compact` could not make room). Not a content
 * policy's: that refusal ends the call as it is.
 */
function refusesRequest(error: unknown): boolean {
  return (isRequestRejected(error) && error.kind === 'bad_request') || tooBig(error) !== undefined
}

/** Words of a refusal about the context window, not the output cap alone. */
const WINDOW_WORDS = /context (length|window|limit)|input tokens|`?inputs`? tokens/i

/** How each dialect names the output cap in its refusal of one too large. */
const CAP_NAMES =
  /max_tokens|max_completion_tokens|max_output_tokens|maxOutputTokens|max_new_tokens/i

/**
 * Continuation parts as one answer: content and text joined, usage summed
 * (with `discarded`'s, an answer replaced by a retry with a raised cap), the
 * last part's ids. A refusal's text joins only refusal text (as the stream
 * collector keeps them apart), so `refusal` is the parts' refusals, not the
 * last part's alone, and answer text is never marked as one.
 */
function join(parts: ChatResponse[], discarded?: ChatResponse | undefined): ChatResponse {
  const last = parts.at(-1) as ChatResponse
  const content: ContentBlock[] = []
  for (const part of parts) {
    for (const block of part.content) {
      const prev = content.at(-1)
      if (
        block.type === 'text' &&
        prev?.type === 'text' &&
        (prev.refusal === true) === (block.refusal === true)
      ) {
        content[content.length - 1] =
          block.refusal === true
            ? { type: 'text', text: prev.text + block.text, refusal: true }
            : { type: 'text', text: prev.text + block.text }
      } else content.push(block)
    }
  }
  const { refusal: _lastRefusal, usageReported: _lastReported, ...rest } = last
  const generations = discarded === undefined ? parts : [discarded, ...parts]
  const joined: ChatResponse = {
    ...rest,
    content,
    text: parts.map((p) => p.text).join(''),
    usage: sumUsage(generations.map((p) => p.usage)),
  }
  // The sum is a count when any generation reported one (a lower bound if
  // not all did); zeros from none of them are "not said", as for one answer.
  if (generations.every((p) => p.usageReported === false)) joined.usageReported = false
  const refusal = refusalOf(content)
  if (refusal !== undefined) joined.refusal = refusal
  return joined
}

/** The optional counts of `Usage`: each summed over the parts that reported it. */
const OPTIONAL_COUNTS = [
  'cachedInputTokens',
  'cacheCreationInputTokens',
  'cacheCreation1hInputTokens',
  'reasoningTokens',
  'acceptedPredictionTokens',
  'rejectedPredictionTokens',
] as const satisfies readonly (keyof Usage)[]

/**
 * Every generation's usage added up. The optional counts (cached input,
 * cache writes, reasoning, Predicted Outputs) are summed over the parts that
 * reported them, and present when any did: dropping them under-reported what
 * the cache saved and what reasoning cost for every recovered answer.
 */
export function sumUsage(usages: readonly Usage[]): Usage {
  const sum: Usage = { inputTokens: 0, outputTokens: 0 }
  for (const usage of usages) {
    sum.inputTokens += usage.inputTokens
    sum.outputTokens += usage.outputTokens
    for (const field of OPTIONAL_COUNTS) {
      const count = usage[field]
      if (count !== undefined) sum[field] = (sum[field] ?? 0) + count
    }
  }
  return sum
}
