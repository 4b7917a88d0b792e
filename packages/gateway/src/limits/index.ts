export {
  isProviderLimited,
  type ProviderLimitedDetails,
  ProviderLimitedError,
} from './ProviderLimitedError.js'
export {
  type LimitDecision,
  type LimitOptions,
  type ProviderLimit,
  ProviderLimits,
  type ProviderLimitsOptions,
} from './ProviderLimits.js'
