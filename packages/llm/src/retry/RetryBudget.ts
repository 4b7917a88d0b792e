import { optionError } from '@hourglass/core'

export interface RetryBudgetOptions {
  /** Size of the bucket. Default 10 (gRPC's `maxTokens` is 1–1000). Must be > 0. */
  maxTokens?: number | undefined
  /**
   * Tokens refunded by each success. Default 0.1: retries may add at most
   * ~10 % to steady traffic. Counted to a billionth of a token, rounded
   * down (2/3 refunds 0.666666666); 0, or at least a billionth (1e-9).
   */
  tokenRatio?: number | undefined
}

/**
 * gRPC retry throttling (gRFC A6) for one provider: a bucket that starts full
 * at `maxTokens`. Every failed attempt that would be worth retrying costs 1
 * token, every success refunds `tokenRatio`, and retries are allowed only
 * while more than half the bucket is left (`tokens > maxTokens / 2`).
 *
 * Why: per-call retry limits do not bound a fleet. When a provider starts
 * answering 429 to everyone, each of N callers retrying 3 times triples the
 * load that caused the 429. With a shared bucket, a storm drains it within
 * `maxTokens / 2` failures and from then on only first attempts go out until
 * successes refill it, so retries add at most about `tokenRatio` of the
 * success traffic.
 */
export class RetryBudget {
  readonly maxTokens: number
  readonly tokenRatio: number
  #tokens: number

  constructor(options: RetryBudgetOptions = {}) {
    const maxTokens = options.maxTokens ?? 10
    const tokenRatio = options.tokenRatio ?? 0.1
    if (typeof maxTokens !== 'number' || !(maxTokens > 0) || !Number.isFinite(maxTokens)) {
      throw optionError('RetryBudget: maxTokens', 'a finite number > 0', maxTokens)
    }
    if (typeof tokenRatio !== 'number' || !(tokenRatio >= 0) || !Number.isFinite(tokenRatio)) {
      throw optionError('RetryBudget: tokenRatio', 'a finite number ≥ 0', tokenRatio)
    }
    // Down, never up: a ratio counted above its value (2/3 as 0.666666667)
    // refilled past exactly half and allowed a retry exact arithmetic refuses.
    const refund = billionthsBelow(tokenRatio)
    if (tokenRatio > 0 && refund === 0) {
      // Counted as 0, successes would never refill the bucket: said, not done.
      throw optionError('RetryBudget: tokenRatio', '0 or at least a billionth (1e-9)', tokenRatio)
    }
    this.maxTokens = maxTokens
    this.tokenRatio = refund
    this.#tokens = maxTokens
  }

  /** Tokens left, between 0 and `maxTokens`. */
  get tokens(): number {
    return this.#tokens
  }

  /** True while a retry may be sent: more than half the bucket is left. */
  canRetry(): boolean {
    return this.#tokens > this.maxTokens / 2
  }

  /** A retryable failure (rate limit, overload, 5xx, timeout, network) came back. */
  recordFailure(): void {
    this.#tokens = counted(Math.max(0, this.#tokens - 1))
  }

  /**
   * Take back one `recordFailure()` that proved not to be a provider's
   * failure (the gateway charges a client's retry before sending it, and
   * refunds it when the retry succeeds, fails on the client's own request or
   * is sent nowhere). Capped at `maxTokens`.
   */
  refundFailure(): void {
    this.#tokens = Math.min(this.maxTokens, counted(this.#tokens + 1))
  }

  /** An attempt succeeded. */
  recordSuccess(): void {
    this.#tokens = Math.min(this.maxTokens, counted(this.#tokens + this.tokenRatio))
  }
}

/**
 * `tokens` to the billionth of a token. Tenths summed as floats drift (0.1
 * ten times is 0.9999999999999999), and the drift decided retries: a bucket
 * at exactly half, `maxTokens / 2`, read 5.000000000000001 after refills and
 * allowed a retry the rule refuses (gRPC counts in thousandths for the
 * same reason). With `tokenRatio` a whole number of billionths (the
 * constructor rounds it down), rounded after each change, the count is the
 * float nearest the exact one while the float error of `tokens × 1e9` stays
 * under a half: for any `maxTokens` up to a million (checked to 2
 * million), far above any real setting (gRPC's is at most 1000). So the
 * drift never builds up and the comparison with half is exact. Capped at
 * `maxTokens` after rounding: a `maxTokens` of no whole billionths (2/3)
 * read 0.666666667 once refilled, above itself.
 */
function counted(tokens: number): number {
  return Math.round(tokens * 1e9) / 1e9
}

/** `ratio` rounded down to a whole number of billionths. */
function billionthsBelow(ratio: number): number {
  const billionths = Math.round(ratio * 1e9)
  // Rounded up (2/3 → 666666667): one billionth less.
  return (billionths / 1e9 > ratio ? billionths - 1 : billionths) / 1e9
}
