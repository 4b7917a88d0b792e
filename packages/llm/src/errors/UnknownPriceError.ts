import { HourglassError, hasErrorCode } from '@hourglass/core'

/**
 * A `CostBudget` was asked to price a model missing from its price table.
 * Refusing is the safe default: pricing an unknown model at zero would let a
 * typo in a model name spend without limit. Pass `allowUnpriced: true` to
 * count such models as free instead.
 */
export class UnknownPriceError extends HourglassError {
  static readonly code = 'UNKNOWN_PRICE'
  readonly model: string

  constructor(model: string) {
    super(
      UnknownPriceError.code,
      `no price for model "${model}" in the cost budget's price table (add it to \`prices\` or the provider's \`providerPrices\`, or set \`allowUnpriced: true\` to count it as free)`,
    )
    this.model = model
  }
}

export function isUnknownPrice(error: unknown): error is UnknownPriceError {
  return hasErrorCode(error, UnknownPriceError.code)
}
