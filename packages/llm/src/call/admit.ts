import type { ModelAdapter } from '../adapters/ModelAdapter.js'
import type { AdmissionPermit } from '../admission/AdmissionPermit.js'
import { estimatePromptTokens } from '../budget/estimatePromptTokens.js'
import { isKeysRetired, type KeysRetiredError } from '../errors/KeysRetiredError.js'
import { isRateLimited, type RateLimitedError } from '../errors/RateLimitedError.js'
import { DEFAULT_MAX_RETRY_AFTER_MS } from '../retry/maxRetryAfter.js'
import { answersBefore, describeOutlook, expectedMs } from '../retry/modelOutlook.js'
import type { ChatRequest } from '../types.js'
import type { CallState } from './CallState.js'
import { earliestOf, labelOf, outlookOf, targetOf } from './outlook.js'

export type Admitted =
  /** Send (with the permit's key when admission is on); `waited` says why a wait was taken. */
  | { kind: 'send'; permit: AdmissionPermit | undefined; waited: string | undefined }
  /**
   * Not sent: the model is cooling past the deadline, or past when another
   * model should answer — `sooner`: refused for that alone (the call may
   * come back to it once the others have failed).
   */
  | {
      kind: 'refused'
      error: RateLimitedError | KeysRetiredError
      reason: string
      sooner: boolean
    }

/**
 * Admission for one attempt on `adapter`, `later` being the models after it,
 * `refusedKeys` the keys this call saw refused (tried after the others:
 * `targetOf`), `leftOut` keys not to be granted at all this time.
 * A cooling model is waited for only while it is still expected to answer no
 * later than the earliest of the others (its wait plus its recent latency
 * against theirs; a model without history is assumed to answer at once) and
 * the wait fits the deadline; otherwise it is refused at once, sending
 * nothing, and the call moves on.
 */
export async function admit(
  state: CallState,
  adapter: ModelAdapter,
  request: ChatRequest,
  later: readonly ModelAdapter[],
  stream: boolean,
  refusedKeys?: ReadonlySet<string> | undefined,
  leftOut?: ReadonlySet<string> | undefined,
): Promise<Admitted> {
  const { admission, deadline, signal } = state
  if (admission === undefined) return { kind: 'send', permit: undefined, waited: undefined }
  const here = outlookOf(state, adapter, refusedKeys, leftOut)
  // A fallback that cannot build the request is left out only while this
  // model is cooling or its limits window is known full (a wait is in
  // view): a healthy call builds no fallback's request before each attempt.
  const checked = here.waitMs > 0
  let next = earliestOf(state, later, request, checked ? { stream } : undefined)
  // At the whole ms reasons show (`answersBefore`): a cooling model expected
  // within the same millisecond as the next one is a tie, and is waited for.
  const waitWorth = () =>
    next === undefined
      ? undefined
      : Math.max(0, Math.ceil(expectedMs(next)) - (here.latencyMs ?? 0))
  const maxWaitMs = waitWorth()
  // The keys this call saw refused last: the permit's key is the one sent.
  const target = targetOf(adapter, refusedKeys, leftOut)
  // The time the attempt needs once admitted: what admission expects (the
  // provider's recent latency, else its `defaultNeededMs`), and never less
  // than `retry.minAttemptMs`, the caller's floor — a cooldown that leaves
  // less is not waited for, as a retry's wait that leaves less is not slept.
  // A floor, not a figure fixed now: admission reads the provider's latency
  // again on each pass of a wait, as calls answered meanwhile measure it.
  const minAttemptMs = state.retry.minAttemptMs ?? 0
  const minNeededMs = minAttemptMs > 0 ? minAttemptMs : undefined
  try {
    // Object.assign onto the target, not `{ ...targetOf(adapter), … }`: on
    // Node 20 each field after a spread costs ~0.4 µs (~4 µs here).
    const permit = await admission.acquire(
      Object.assign(target, {
        deadline,
        minNeededMs,
        // The call's signal: a stream's cancel ends a cooldown wait at once, as the caller's signal does.
        signal,
        hasFallback: next !== undefined,
        maxWaitMs,
        // A cooldown a server's Retry-After started is waited for no longer
        // than this call's own retry would sleep it (`decideRetry`); the
        // call's other waits are not bounded by it.
        maxRetryAfterMs: state.retry.maxRetryAfterMs ?? DEFAULT_MAX_RETRY_AFTER_MS,
        // Background work fails at once on an overload (`decideRetry`), one
        // another call met included: it does not wait out the cooldown to be
        // sent at recovery, ahead of the foreground calls after it.
        waitsOnOverload: state.retry.priority !== 'background',
        // A wait found only by `acquire` (this model's limits window filled
        // since its last count, a cooldown the store knew of): the same
        // check as for a wait in view here — a fallback that cannot build
        // the request, jumped to, ended the call with the builder's error.
        reweigh:
          checked || next === undefined
            ? undefined
            : () => {
                next = earliestOf(state, later, request, { stream })
                return { maxWaitMs: waitWorth(), hasFallback: next !== undefined }
              },
        // Its weight against a TPM limit: what the prompt (as this adapter's
        // provider bills it) and the answer may use.
        tokens: () => estimatePromptTokens(request, adapter.dialect.name) + request.maxTokens,
        // A call back after a 429 keeps its place in line.
        waitingSince: state.startedAt,
      }),
    )
    const waited =
      permit.waitedMs < 1
        ? undefined
        : `waited ${Math.round(permit.waitedMs)} ms for the provider's limits` +
          (next === undefined ? '' : ` (${describeOutlook(here)}, before ${describeOutlook(next)})`)
    return { kind: 'send', permit, waited }
  } catch (refused) {
    if (!isRateLimited(refused) && !isKeysRetired(refused)) throw refused
    let reason = refused.message
    let sooner = false
    // A refusal of the size (`request_too_large`), or one no wait lifts (a
    // request over this process's share of a TPM limit while Redis is away:
    // `retryAfterMs` Infinity), is no wait for another model's answer: the
    // call does not come back to it (it did, to be refused again at once).
    if (
      isRateLimited(refused) &&
      next !== undefined &&
      refused.kind !== 'request_too_large' &&
      Number.isFinite(refused.retryAfterMs)
    ) {
      // Said only when its figures show it; else the refusal's own words
      // (the deadline) are the reason.
      const cooling = { ...here, waitMs: refused.retryAfterMs }
      if (answersBefore(next, cooling)) {
        sooner = true
        reason = `${labelOf(adapter)} not waited for: ${describeOutlook(next)} is expected to answer before ${describeOutlook(cooling)}`
      }
    }
    return { kind: 'refused', error: refused, reason, sooner }
  }
}
