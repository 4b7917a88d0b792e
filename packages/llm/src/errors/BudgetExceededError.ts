import { HourglassError, hasErrorCode } from '@hourglass/core'

export interface BudgetExceededDetails {
  /** The budget's limit, in USD. */
  limitUsd: number
  /** What had been spent before this attempt, in USD. */
  spentUsd: number
  /** What other attempts in flight held (their estimates), in USD; 0 when none. */
  reservedUsd?: number | undefined
  /** What the refused attempt was estimated to cost, in USD. */
  estimateUsd: number
  cause?: unknown
}

/**
 * An attempt would have taken spending past the cost budget, so it was not
 * sent. Thrown before the request leaves: the retry loop is where unbounded
 * bills are born, so the check sits in front of every attempt.
 */
export class BudgetExceededError extends HourglassError {
  static readonly code = 'BUDGET_EXCEEDED'
  readonly limitUsd: number
  readonly spentUsd: number
  readonly reservedUsd: number
  readonly estimateUsd: number

  constructor(details: BudgetExceededDetails) {
    super(
      BudgetExceededError.code,
      `cost budget exceeded: ${usd(details.spentUsd)} spent + ${held(details.reservedUsd)}${usd(details.estimateUsd)} estimated > ${usd(details.limitUsd)} limit; the attempt was not sent`,
      details.cause === undefined ? undefined : { cause: details.cause },
    )
    this.limitUsd = details.limitUsd
    this.spentUsd = details.spentUsd
    this.reservedUsd = details.reservedUsd ?? 0
    this.estimateUsd = details.estimateUsd
  }
}

/** The attempts in flight's share of the message; nothing when they hold nothing. */
function held(reservedUsd: number | undefined): string {
  return reservedUsd ? `${usd(reservedUsd)} held by attempts in flight + ` : ''
}

function usd(value: number): string {
  return `$${value.toFixed(6).replace(/0+$/, '').replace(/\.$/, '')}`
}

export function isBudgetExceeded(error: unknown): error is BudgetExceededError {
  return hasErrorCode(error, BudgetExceededError.code)
}
