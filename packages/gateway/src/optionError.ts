import { optionError as coreOptionError } from '@hourglass/core'

/** The `code` of every error `createGateway` / `startGateway` throw for a bad option. */
export const GATEWAY_OPTION_INVALID = 'GATEWAY_OPTION_INVALID'

/**
 * A bad option, refused when the gateway is made — not a NaN that turns
 * into "no body limit" or "cancel every request at once" when it is used.
 * A `TypeError` for a value of the wrong type, a `RangeError` for one out of
 * range (NaN included), both with `code: 'GATEWAY_OPTION_INVALID'`.
 */
export function optionError(
  where: string,
  name: string,
  rule: string,
  value: unknown,
): (RangeError | TypeError) & { code: string } {
  return Object.assign(coreOptionError(`${where}: ${name}`, rule, value), {
    code: GATEWAY_OPTION_INVALID,
  })
}
