import { HourglassError, hasErrorCode } from '@hourglass/core'
import { describeFailures, type ModelFailure } from './ModelFailure.js'

export interface BudgetExceededDetails {
  /** The budget's limit, in USD. */
  limitUsd: number
  /** What had been spent before this attempt, in USD. */
  spentUsd: number
  /** What other attempts in flight held (their estimates), in USD; 0 when none. */
  reservedUsd?: number | undefined
  /** What the refused attempt was estimated to cost, in USD. */
  estimateUsd: number
  /**
   * From `callModel`: every model of the list, in order, and why each gave
   * up — the ones the budget could not afford (nothing sent to them) and any
   * tried before them.
   */
  causes?: ModelFailure[] | undefined
  cause?: unknown
}

/**
 * An attempt would have taken spending past the cost budget, so it was not
 * sent. Thrown before the request leaves: the retry loop is where unbounded
 * bills are born, so the check sits in front of every attempt. `callModel`
 * skips a model the budget cannot afford for the next one of its list, and
 * throws this only when the last one does not fit either (`causes` names
 * them all); the figures are that last refusal's.
 */
export class BudgetExceededError extends HourglassError {
  static override readonly errorName: string = 'BudgetExceededError'
  static readonly code = 'BUDGET_EXCEEDED'
  readonly limitUsd: number
  readonly spentUsd: number
  readonly reservedUsd: number
  readonly estimateUsd: number
  /** The models of the call and why each gave up (empty when thrown by `CostBudget` itself). */
  readonly causes: ModelFailure[]

  constructor(details: BudgetExceededDetails) {
    const causes = details.causes ?? []
    const tried = describeFailures(causes)
    super(
      BudgetExceededError.code,
      `cost budget exceeded: ${usd(details.spentUsd)} spent + ${held(details.reservedUsd)}${usd(details.estimateUsd)} estimated > ${usd(details.limitUsd)} limit; the attempt was not sent${tried === '' ? '' : ` [${tried}]`}`,
      details.cause === undefined ? undefined : { cause: details.cause },
    )
    this.limitUsd = details.limitUsd
    this.spentUsd = details.spentUsd
    this.reservedUsd = details.reservedUsd ?? 0
    this.estimateUsd = details.estimateUsd
    this.causes = causes
  }
}

/**
 * Why a model was skipped for the budget, for its `ModelFailure.reason`
 * (and so the next model's `choice`). @internal
 */
export function unaffordable(error: BudgetExceededError): string {
  return `the cost budget cannot afford it: ${usd(error.estimateUsd)} estimated, ${usd(error.spentUsd)} spent${error.reservedUsd ? ` and ${usd(error.reservedUsd)} held by attempts in flight` : ''} of the ${usd(error.limitUsd)} limit; not sent`
}

/** The attempts in flight's share of the message; nothing when they hold nothing. */
function held(reservedUsd: number | undefined): string {
  return reservedUsd ? `${usd(reservedUsd)} held by attempts in flight + ` : ''
}

/**
 * Dollars to six decimals, as a bill reads; an amount below a millionth (a
 * few tokens of a cheap model, a test's tiny limit) to its second
 * significant digit: at six decimals a 1e-7 limit printed as "$0".
 */
function usd(value: number): string {
  const small = value !== 0 && Math.abs(value) < 1e-6
  const digits = small ? Math.min(20, 1 - Math.floor(Math.log10(Math.abs(value)))) : 6
  return `$${value.toFixed(digits).replace(/0+$/, '').replace(/\.$/, '')}`
}

export function isBudgetExceeded(error: unknown): error is BudgetExceededError {
  return hasErrorCode(error, BudgetExceededError.code)
}
