import { MAX_TIMER_MS } from '@hourglass/core'
import { REQUEST_BOUND_KINDS } from '../errors/errorKinds.js'
import { limitKindOf } from '../errors/limitKindOf.js'
import { isStreamInterrupted } from '../errors/StreamInterruptedError.js'
import { decideRetry, type RetryDecision, type RetryDecisionInput } from '../retry/decideRetry.js'

/**
 * What stood in the way of retrying a model after a failed attempt that
 * `decideRetry` did not retry (the attempt message's `why`), else undefined.
 *
 * Asked of `decideRetry` itself, not of a second copy of its rules: the
 * decision is taken again without the time limit (`no-budget` when that
 * alone would have retried), then, still without it, without each other
 * limit in turn. Only after a failure that is not retried: never on the
 * success path. The probes draw no random numbers from the caller's source
 * (a seeded one keeps its sequence).
 */
export function retrySkippedWhy(
  input: RetryDecisionInput,
  decision: RetryDecision,
): string | undefined {
  if (decision.action === 'retry') return undefined
  const { error } = input
  if (REQUEST_BOUND_KINDS.has(error.kind) || !error.retryable) return 'not-retryable'
  if (limitKindOf(error) === 'overloaded' && input.priority === 'background') return 'background'
  // Every key of the model retired: no limit lifted brings it back.
  if (input.waitMs === Number.POSITIVE_INFINITY) return 'keys-retired'
  const timeless: RetryDecisionInput = Object.assign({}, input, {
    remainingMs: Number.POSITIVE_INFINITY,
    minAttemptMs: 0,
    random: middle,
  })
  if (retries(timeless)) return 'no-budget'
  for (const [why, lifted] of LIMITS) {
    if (retries(Object.assign({}, timeless, lifted(input)))) return why
  }
  return 'not-retried'
}

/**
 * The why of an attempt ended by a throw (the call stopped, or a stream
 * broken after its first token), from its `errorKind` (`endedKind`).
 */
export function endedWhy(thrown: unknown, errorKind: string | undefined): string | undefined {
  if (errorKind === 'deadline_exceeded') return 'no-budget'
  if (errorKind === 'aborted') return 'aborted'
  return isStreamInterrupted(thrown) ? 'after-first-byte' : undefined
}

const middle = () => 0.5

const retries = (input: RetryDecisionInput) => decideRetry(input).action === 'retry'

/** decideRetry's other limits, in its order, each as the input that lifts it. */
const LIMITS: ReadonlyArray<
  readonly [string, (input: RetryDecisionInput) => Partial<RetryDecisionInput>]
> = [
  ['max-overloads', () => ({ max529Retries: Number.POSITIVE_INFINITY })],
  ['max-attempts', (input) => ({ maxAttempts: input.attempt + 1 })],
  ['retry-budget', () => ({ retryBudget: undefined })],
  ['retry-after-too-long', () => ({ maxRetryAfterMs: MAX_TIMER_MS })],
  ['fallback-sooner', () => ({ fallback: undefined })],
]
