import { HourglassError, hasErrorCode } from '@hourglass/core'

export interface KeysRetiredDetails {
  provider: string
  /** Short ids of the retired keys (never the keys). */
  keyIds: string[]
  /** Why they were retired: `auth`, or `quota_exhausted` when every key's quota is gone for good. */
  reason: 'auth' | 'quota_exhausted'
  /**
   * The model they are retired for, when it is that model on each key that
   * is retired (a quota naming the model: Gemini's `limit: 0`), not the keys.
   */
  model?: string | undefined
}

/**
 * Every key of the provider was retired (rejected as invalid, or its quota
 * is gone for good). Waiting does not help; fix the configuration or fall
 * back to another provider.
 */
export class KeysRetiredError extends HourglassError {
  static override readonly errorName: string = 'KeysRetiredError'
  static readonly code = 'KEYS_RETIRED'
  readonly provider: string
  readonly keyIds: string[]
  /** `auth` (a key was rejected), or `quota_exhausted` when every key's quota is gone for good. */
  readonly reason: 'auth' | 'quota_exhausted'
  /** Set when the keys are retired for this model only (their other models may still go). */
  readonly model: string | undefined

  constructor(details: KeysRetiredDetails) {
    const only = details.model === undefined ? '' : ` for ${details.model}`
    super(
      KeysRetiredError.code,
      `every key of ${details.provider} is retired${only} (${details.reason}): ${details.keyIds.join(', ')}`,
    )
    this.provider = details.provider
    this.keyIds = details.keyIds
    this.reason = details.reason
    this.model = details.model
  }
}

export function isKeysRetired(error: unknown): error is KeysRetiredError {
  return hasErrorCode(error, KeysRetiredError.code)
}
