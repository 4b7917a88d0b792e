import { HourglassError, hasErrorCode } from '@hourglass/core'

/**
 * A `CostBudget` was asked to price a model missing from its price table.
 * Refusing is the safe default: pricing an unknown model at zero would let a
 * typo in a model name spend without limit. Pass `allowUnpriced: true` to
 * count such models as free instead.
 */
export class UnknownPriceError extends HourglassError {
  static override readonly errorName: string = 'UnknownPriceError'
  static readonly code = 'UNKNOWN_PRICE'
  readonly model: string
  /**
   * The service tier asked for (`extra.service_tier`) that the model's price
   * has no price for (`ModelPrice.serviceTiers`); absent when the model
   * itself has no price.
   */
  readonly serviceTier: string | undefined

  constructor(model: string, serviceTier?: string) {
    super(
      UnknownPriceError.code,
      serviceTier === undefined
        ? `no price for model "${model}" in the cost budget's price table (add it to \`prices\` or the provider's \`providerPrices\`, or set \`allowUnpriced: true\` to count it as free)`
        : `no price for service tier "${serviceTier}" of model "${model}" in the cost budget's price table (add it to the model's \`serviceTiers\` — at the standard price if it bills no more — or send a tier the price lists)`,
    )
    this.model = model
    this.serviceTier = serviceTier
  }
}

export function isUnknownPrice(error: unknown): error is UnknownPriceError {
  return hasErrorCode(error, UnknownPriceError.code)
}
