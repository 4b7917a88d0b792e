import type { ProviderError } from '../errors/ProviderError.js'
import { isMalformedReply, isProviderReplyError } from '../errors/ProviderReplyError.js'
import { isResponseTooLarge } from '../errors/ResponseTooLargeError.js'
import type { ChatRequest, Usage } from '../types.js'
import type { CostBudget } from './CostBudget.js'
import { predictedOutputTokens } from './estimatePromptTokens.js'
import { requestedServiceTier } from './requestedServiceTier.js'

/**
 * An attempt that failed after the provider took the request: the provider
 * bills it although no whole answer came back. What each is charged:
 *
 * - `cut` — a stream cut after its first token (the caller left, the
 *   deadline, a body timeout, a network cut, past `maxStreamBytes`): the
 *   provider's usage if its `finish` event had come; else, when the
 *   provider had sent its input counts (Anthropic's `message_start`,
 *   Gemini's `usageMetadata`, an OpenAI-compatible usage chunk before its
 *   finish), those (`soFar`), with the output so far (its running count,
 *   or what was delivered — `estimatedOutputTokens`, capped as below —
 *   whichever is more); else the prompt
 *   estimate plus the output that arrived: the text, thinking, tool names
 *   and argument text delivered, counted as the prompt estimate counts text
 *   (`textWeight`: chars / 4 for ASCII, a token per other character), at
 *   most the request's `maxTokens` (`estimatedOutputTokens`). A lower bound:
 *   what was generated and not delivered (in flight, hidden reasoning, after
 *   the cut) is not counted.
 * - `whole` — a 2xx answer that broke off (a cut, the body timeout, the
 *   deadline, the caller's signal), was past `maxResponseBytes` while its
 *   body was read, or could not be read (JSON cut short or without the
 *   answer in it): the whole generation happened, its usage is unknown: the
 *   prompt estimate plus `maxTokens` (and the price's
 *   `uncappedReasoningTokens`), the worst case `estimate` uses.
 * - `prompt` — a stream whose 2xx headers came, then no token (a first-token
 *   timeout, a cut, the call ended, past `maxStreamBytes`, an event that
 *   could not be read): the prompt estimate only — or, when the provider
 *   had sent its input counts, a `cut` of no output charged by them.
 *
 * The deadline and the caller's signal end the call with their own error,
 * not a `ProviderError`: `callModel` tells what they cut from what the
 * attempt had received (a stream's events, `SendOptions.answerStarted`).
 * A refusal (an error status, an error the provider put in a 2xx body or
 * stream frame, a connect failure, nothing sent) and an attempt stopped
 * before any response headers cost nothing — a non-streamed one whose
 * headers timed out too, though the provider may have been generating it:
 * a stalled upload the provider never read ends the same way (the headers
 * limit counts from the last piece written), and nothing here tells the
 * two apart. @internal
 */
export type BilledFailure =
  | {
      kind: 'cut'
      /** The `textWeight` of the output delivered (text, thinking, tool names and argument text). */
      outputWeight: number
      usage: Usage | undefined
      /**
       * `usage` is the counts the provider had sent before its `finish`
       * (its output a running count): the output charged is the larger of
       * that count and the estimate of `outputWeight`. Else `usage` is the
       * provider's whole usage, charged as it is.
       */
      soFar?: boolean | undefined
      /** The tier the stream said serves it (its chunks, `message_start`): charged at it. */
      serviceTier?: string | undefined
    }
  | { kind: 'whole' }
  | { kind: 'prompt' }

/**
 * Adds what `billed` is charged (above) to `budget`, at `provider`'s price,
 * its prompt estimated as `dialect` sends it, and returns it, in USD; 0 for `undefined`.
 */
export function chargeBilledFailure(
  budget: CostBudget,
  model: string,
  request: Pick<ChatRequest, 'messages' | 'tools' | 'extra' | 'maxTokens'>,
  billed: BilledFailure | undefined,
  provider?: string,
  dialect?: string,
): number {
  switch (billed?.kind) {
    case undefined:
      return 0
    case 'cut':
      return billed.usage !== undefined
        ? budget.record(
            model,
            billed.soFar === true
              ? withOutputSoFar(budget, model, request, billed.usage, billed.outputWeight, provider)
              : billed.usage,
            provider,
            billed.serviceTier ?? requestedServiceTier(request),
          )
        : budget.recordEstimate(
            model,
            request,
            estimatedOutputTokens(budget, model, request, billed.outputWeight, provider),
            provider,
            billed.serviceTier,
            dialect,
          )
    case 'whole':
      return budget.recordEstimate(
        model,
        request,
        worstBilledOutput(budget, model, request, provider),
        provider,
        undefined,
        dialect,
      )
    case 'prompt':
      return budget.recordEstimate(model, request, 0, provider, undefined, dialect)
  }
}

/**
 * Counts sent before the `finish` (`soFar`), with the output the larger of
 * the provider's running count and `estimatedOutputTokens` of what was
 * delivered: capped as every charge by characters is (uncapped, a stream
 * cut after Anthropic's `message_start` with 40,000 characters delivered to
 * a request capped at 100 tokens was charged 10,000 output tokens).
 */
function withOutputSoFar(
  budget: CostBudget,
  model: string,
  request: Pick<ChatRequest, 'maxTokens' | 'extra'>,
  usage: Usage,
  outputWeight: number,
  provider: string | undefined,
): Usage {
  if (outputWeight <= 0) return usage
  const estimated = estimatedOutputTokens(budget, model, request, outputWeight, provider)
  return estimated > usage.outputTokens ? { ...usage, outputTokens: estimated } : usage
}

/**
 * Output tokens counted for output of `textWeight` `weight` delivered:
 * `ceil(weight / 4)`, chars / 4 for ASCII and a token per other character,
 * as the prompt estimate counts. Counted as chars / 4 whatever the script,
 * 40 Chinese characters delivered were charged 10 output tokens, a quarter
 * of what every provider bills for them: cutting streams passed the limit.
 */
export function deliveredTokens(weight: number): number {
  return Math.ceil(weight / 4)
}

/**
 * The output an attempt whose usage is unknown is charged for output of
 * `textWeight` `weight` delivered: `deliveredTokens`, at most what the request lets the
 * provider bill — `maxTokens`, plus the price's `uncappedReasoningTokens`
 * (`CostBudget.worstOutputTokens`), and a prediction's tokens (`worstBilledOutput`):
 * what `estimate` held for it. Characters
 * are a guess at tokens (a token can be many: a run of spaces, a repeated
 * string, a long number), and uncapped, 40,000 characters answered to a
 * request capped at 100 tokens were charged 10,000.
 */
export function estimatedOutputTokens(
  budget: CostBudget,
  model: string,
  request: Pick<ChatRequest, 'maxTokens' | 'extra'>,
  weight: number,
  provider?: string,
): number {
  return Math.min(deliveredTokens(weight), worstBilledOutput(budget, model, request, provider))
}

/**
 * The most output an attempt can be billed: `maxTokens` plus the price's
 * `uncappedReasoningTokens` (`CostBudget.worstOutputTokens`), plus a
 * prediction's tokens (billed as output when rejected, beyond the cap) —
 * what `estimate` held for it. One figure for an answer lost whole and the
 * cap on a charge by characters: capped at `maxTokens` alone, a stream cut
 * after 8,000 characters of a predicted edit was charged 100 output tokens
 * where 2,000 had come.
 */
function worstBilledOutput(
  budget: CostBudget,
  model: string,
  request: Pick<ChatRequest, 'maxTokens' | 'extra'>,
  provider: string | undefined,
): number {
  return (
    budget.worstOutputTokens(model, request.maxTokens, provider) + predictedOutputTokens(request)
  )
}

/**
 * What a failed attempt's `ProviderError` says was billed. `streamAnswered`:
 * for a streamed attempt, whether its 2xx stream headers came (a 2xx that
 * failed before them was a whole JSON answer); `undefined` when not streamed.
 */
export function billedBy(
  error: ProviderError,
  streamAnswered: boolean | undefined,
): BilledFailure | undefined {
  if (!(error.status >= 200 && error.status < 300)) return undefined
  // A 2xx the provider answered that could not be read: a stream's event,
  // charged as a cut (the provider had started the generation); a whole
  // answer (a truncated or garbled body), as the whole generation it was.
  // A body that was no answer at all (a proxy's page) carries no such cause.
  if (isMalformedReply(error.cause)) return streamAnswered === true ? PROMPT : WHOLE
  if (!lostInTransit(error)) return undefined
  return streamAnswered === true ? PROMPT : WHOLE
}

const PROMPT: BilledFailure = { kind: 'prompt' }
const WHOLE: BilledFailure = { kind: 'whole' }

/**
 * A 2xx reply lost on its way (a cut, a read or first-token timeout, a stream
 * ended before its end marker, a body past `maxResponseBytes`) — not an
 * error the provider put in it: dialects never classify one as `network`,
 * and an error frame or body that says `timeout` carries no transport cause.
 */
function lostInTransit(error: ProviderError): boolean {
  if (isResponseTooLarge(error.cause)) return true
  if (isProviderReplyError(error.cause)) return false
  return error.kind === 'network' || (error.kind === 'timeout' && error.cause !== undefined)
}
