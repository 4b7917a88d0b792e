import { optionError } from '@hourglass/core'
import { BudgetExceededError } from '../errors/BudgetExceededError.js'
import { UnknownPriceError } from '../errors/UnknownPriceError.js'
import type { ChatRequest, Usage } from '../types.js'
import { estimatePromptTokens } from './estimatePromptTokens.js'

/** USD per million tokens. */
export interface ModelPrice {
  inputPerMTok: number
  outputPerMTok: number
}

export interface CostBudgetOptions {
  /** The most this budget may spend, in USD. `0` = nothing priced may be sent; `Infinity` = no limit. */
  limitUsd: number
  /** Prices per model name, e.g. `{ 'gpt-4o-mini': { inputPerMTok: 0.15, outputPerMTok: 0.6 } }`. */
  prices: Readonly<Record<string, ModelPrice>>
  /**
   * Count models missing from `prices` as free instead of throwing
   * `UnknownPriceError`. Default `false`: a typo in a model name must not
   * turn the budget off.
   */
  allowUnpriced?: boolean | undefined
}

/**
 * Money as a budget, like time: checked before every attempt, recorded
 * after from the usage the provider reports — or, for an attempt that failed
 * after the provider took it (and so may bill it), from an estimate
 * (`recordEstimate`).
 *
 * `callModel` holds each attempt's estimate (`reserve`) from the check until
 * its cost is recorded, so attempts in flight at once on one budget (parallel
 * calls of an agent, one budget per tenant) cannot together spend past the
 * limit: each is checked against what is spent plus what the others hold.
 * Without the hold, ten concurrent calls each estimated at the whole limit
 * all passed, and spent ten times it.
 */
export class CostBudget {
  readonly limitUsd: number
  readonly #prices: Readonly<Record<string, ModelPrice>>
  readonly #allowUnpriced: boolean
  #spentUsd = 0
  #reservedUsd = 0
  #reservations = 0

  constructor(options: CostBudgetOptions) {
    if (typeof options?.prices !== 'object' || options.prices === null) {
      throw new TypeError('CostBudget: prices must be an object of model name → ModelPrice')
    }
    if (
      typeof options.limitUsd !== 'number' ||
      Number.isNaN(options.limitUsd) ||
      options.limitUsd < 0
    ) {
      throw optionError('CostBudget: limitUsd', 'a number ≥ 0', options.limitUsd)
    }
    for (const [model, price] of Object.entries(options.prices)) {
      if (!isPrice(price?.inputPerMTok) || !isPrice(price?.outputPerMTok)) {
        throw new TypeError(
          `CostBudget: prices["${model}"] needs finite inputPerMTok and outputPerMTok >= 0 (USD per million tokens)`,
        )
      }
    }
    this.limitUsd = options.limitUsd
    this.#prices = options.prices
    this.#allowUnpriced = options.allowUnpriced ?? false
  }

  /** USD spent so far (recorded usage, and the estimates of billed failures). */
  get spentUsd(): number {
    return this.#spentUsd
  }

  /** USD left, not counting what attempts in flight hold (`reservedUsd`); never negative. */
  get remainingUsd(): number {
    return Math.max(0, this.limitUsd - this.#spentUsd)
  }

  /** USD held by attempts in flight: their estimates, until their cost is recorded. */
  get reservedUsd(): number {
    return this.#reservedUsd
  }

  /**
   * What one attempt of `request` on `model` may cost, in USD: the prompt
   * (see `estimatePromptTokens`) at the input price plus the whole
   * `maxTokens` at the output price — the worst case the request allows.
   */
  estimate(model: string, request: Pick<ChatRequest, 'messages' | 'tools' | 'maxTokens'>): number {
    const price = this.#price(model)
    return cost(price, estimatePromptTokens(request), request.maxTokens)
  }

  /**
   * Throws `BudgetExceededError` when `estimateUsd` does not fit in what is
   * left once the attempts in flight have what they hold. Sends nothing.
   */
  assertCanSpend(estimateUsd: number): void {
    if (typeof estimateUsd !== 'number' || !(estimateUsd >= 0)) {
      throw optionError('CostBudget: an estimate', 'a number ≥ 0', estimateUsd)
    }
    // Within float rounding of the limit is at it: 0.1 spent + 0.2 estimated
    // is 0.30000000000000004 in binary, and must fit a 0.3 limit.
    if (this.#spentUsd + this.#reservedUsd + estimateUsd - this.limitUsd > ROUNDING_USD) {
      throw new BudgetExceededError({
        limitUsd: this.limitUsd,
        spentUsd: this.#spentUsd,
        reservedUsd: this.#reservedUsd,
        estimateUsd,
      })
    }
  }

  /**
   * `assertCanSpend(estimateUsd)`, then holds `estimateUsd` until the
   * reservation is released, so every other check counts it meanwhile.
   * Record the attempt's cost (`record`, `recordEstimate`) before releasing,
   * never after: in between, the attempt's money would be neither held nor
   * spent. `release()` gives the hold back once; later calls do nothing.
   */
  reserve(estimateUsd: number): CostReservation {
    this.assertCanSpend(estimateUsd)
    this.#reservedUsd += estimateUsd
    this.#reservations++
    let held = true
    return {
      usd: estimateUsd,
      release: () => {
        if (!held) return
        held = false
        // Back to exactly 0 when nothing is held: sums and differences of
        // floats leave crumbs (1e-18) that would otherwise stay for ever.
        this.#reservedUsd = --this.#reservations === 0 ? 0 : this.#reservedUsd - estimateUsd
      },
    }
  }

  /** Adds the actual cost of `usage` on `model` to the spend and returns it, in USD. */
  record(model: string, usage: Usage): number {
    // Usage is the provider's word (or a custom adapter's): untrusted, so
    // clamped. A NaN count made the spend NaN, and a NaN spend never trips
    // the limit again; a negative one would give money back.
    const usd = cost(this.#price(model), tokens(usage?.inputTokens), tokens(usage?.outputTokens))
    this.#spentUsd += usd
    return usd
  }

  /**
   * Adds the estimated cost of an attempt whose usage is unknown — one that
   * failed after the provider took it — to the spend and returns it, in USD:
   * the prompt (`estimatePromptTokens`, as in `estimate`) at the input price
   * plus `outputTokens` at the output price.
   */
  recordEstimate(
    model: string,
    request: Pick<ChatRequest, 'messages' | 'tools'>,
    outputTokens: number,
  ): number {
    const usd = cost(this.#price(model), estimatePromptTokens(request), tokens(outputTokens))
    this.#spentUsd += usd
    return usd
  }

  #price(model: string): ModelPrice {
    const price = Object.hasOwn(this.#prices, model) ? this.#prices[model] : undefined
    if (price !== undefined) return price
    if (this.#allowUnpriced) return { inputPerMTok: 0, outputPerMTok: 0 }
    throw new UnknownPriceError(model)
  }
}

/** An attempt's estimate, held against a `CostBudget` until `release()`. */
export interface CostReservation {
  /** What is held, in USD. */
  readonly usd: number
  /** Gives the hold back; once (later calls do nothing). */
  release(): void
}

/**
 * How far past the limit a sum may land from binary rounding alone: far below
 * any token's price (1e-8 USD at 0.01 USD per million), far above the
 * rounding of sums of thousands of dollars (~1e-13).
 */
const ROUNDING_USD = 1e-10

function cost(price: ModelPrice, inputTokens: number, outputTokens: number): number {
  return (inputTokens * price.inputPerMTok + outputTokens * price.outputPerMTok) / 1_000_000
}

/**
 * A reported token count: a number ≥ 0, anything else 0. Infinity becomes
 * the largest finite number: still over any limit, but 0 at a free model's
 * price (Infinity × 0 is NaN).
 */
function tokens(value: unknown): number {
  return typeof value === 'number' && value >= 0 ? Math.min(value, Number.MAX_VALUE) : 0
}

function isPrice(value: unknown): boolean {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0
}
