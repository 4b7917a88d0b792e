export {
  Admission,
  type AdmissionForecast,
  type AdmissionOptions,
  type AdmissionRequest,
  type AdmissionTarget,
} from './Admission.js'
export type { AdmissionPermit } from './AdmissionPermit.js'
export type { CooldownExtension, CooldownStore } from './CooldownStore.js'
export { defaultAdmission, setDefaultAdmission } from './defaultAdmission.js'
export { type CooldownInput, defaultCooldownMs } from './defaultCooldownMs.js'
export { isKeysRetired, type KeysRetiredDetails, KeysRetiredError } from './KeysRetiredError.js'
export { endpointId, keyId, NO_KEY_ID } from './keyId.js'
export { LatencyTracker, type LatencyTrackerOptions } from './LatencyTracker.js'
export { MemoryCooldownStore, type MemoryCooldownStoreOptions } from './MemoryCooldownStore.js'
export {
  type LimitDecision,
  type LimitOptions,
  type ProviderLimit,
  ProviderLimits,
  type ProviderLimitsOptions,
  type RedisLimitClient,
} from './ProviderLimits.js'
export {
  COOLDOWN_SCRIPT,
  RedisCooldownStore,
  type RedisCooldownStoreOptions,
  type RedisScriptClient,
} from './RedisCooldownStore.js'
export type { AdmissionFailure, AdmissionOutcome } from './slot.js'
