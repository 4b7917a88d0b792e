import { HourglassError, hasErrorCode } from '@hourglass/core'

/**
 * A store admission relies on — the cooldown store, Redis for the RPM/TPM
 * limits — did not answer within its bound (`commandTimeoutMs`,
 * `redisCommandTimeoutMs`, `storeTimeoutMs`): a frozen Redis, a store that
 * hangs. Silence, not a refusal: the command may still run late. Admission
 * decides on this process's own view meanwhile; a caller that watches the
 * store (the gateway's health, its limits) tells it from an error the
 * store answered with by this code.
 */
export class StoreTimeoutError extends HourglassError {
  static override readonly errorName: string = 'StoreTimeoutError'
  static readonly code = 'STORE_TIMEOUT'
  /** The bound that passed, in ms. */
  readonly timeoutMs: number

  /** The option that set the bound, e.g. `RedisCooldownStore commandTimeoutMs`. */
  readonly option: string

  /** `who` did not answer (`Redis`, `the cooldown store`) within `timeoutMs`, bounded by `option`. */
  constructor(who: string, option: string, timeoutMs: number) {
    super(StoreTimeoutError.code, `${who} did not answer within ${timeoutMs} ms (${option})`)
    this.option = option
    this.timeoutMs = timeoutMs
  }
}

export function isStoreTimeout(error: unknown): error is StoreTimeoutError {
  return hasErrorCode(error, StoreTimeoutError.code)
}
