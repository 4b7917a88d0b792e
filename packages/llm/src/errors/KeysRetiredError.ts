import { HourglassError, hasErrorCode } from '@hourglass/core'

export interface KeysRetiredDetails {
  provider: string
  /** Short ids of the retired keys (never the keys). */
  keyIds: string[]
  /** Why they were retired: `auth`, or `quota_exhausted` when every key's quota is gone for good. */
  reason: 'auth' | 'quota_exhausted'
}

/**
 * Every key of the provider was retired (rejected as invalid, or its quota
 * is gone for good). Waiting does not help; fix the configuration or fall
 * back to another provider.
 */
export class KeysRetiredError extends HourglassError {
  static readonly code = 'KEYS_RETIRED'
  readonly provider: string
  readonly keyIds: string[]
  /** `auth` (a key was rejected), or `quota_exhausted` when every key's quota is gone for good. */
  readonly reason: 'auth' | 'quota_exhausted'

  constructor(details: KeysRetiredDetails) {
    super(
      KeysRetiredError.code,
      `every key of ${details.provider} is retired (${details.reason}): ${details.keyIds.join(', ')}`,
    )
    this.provider = details.provider
    this.keyIds = details.keyIds
    this.reason = details.reason
  }
}

export function isKeysRetired(error: unknown): error is KeysRetiredError {
  return hasErrorCode(error, KeysRetiredError.code)
}
