import { describe, expect, it } from 'vitest'
import * as llm from '../src/index.js'

/**
 * The package's runtime surface, pinned: adding or removing a public name is
 * a decision, made here on purpose, not a side effect of a refactor.
 */
describe('the public surface of @hourglass/llm', () => {
  it('exports exactly these 61 runtime names', () => {
    expect(Object.keys(llm).sort()).toEqual(
      [
        'Admission',
        'CostBudget',
        'DEFAULT_MAX_RETRY_AFTER_MS',
        'ERROR_KINDS',
        'ERROR_KIND_TABLE',
        'MAX_LIMIT_WINDOW_MS',
        'MAX_PROVIDER_TEXT_CHARS',
        'MemoryCooldownStore',
        'MemorySideEffectStore',
        'ProviderLimits',
        'REQUEST_BOUND_KINDS',
        'RedisCooldownStore',
        'RetryBudgetRegistry',
        'SseBufferOverflowError',
        'SseDecoder',
        'StoreTimeoutError',
        'anthropic',
        'baseURLProblem',
        'callModel',
        'createAdapter',
        'cutText',
        'decideRetry',
        'decodeSse',
        'defaultAdmission',
        'defaultRetryBudgets',
        'dialects',
        'escapeUnprintable',
        'estimatePromptTokens',
        'gemini',
        'idempotencyKey',
        'isBudgetExceeded',
        'isInvalidChatRequest',
        'isKeysRetired',
        'isMaxTurnsExceeded',
        'isModelUnavailable',
        'isOutputTruncated',
        'isProviderError',
        'isProviderReplyError',
        'isRateLimited',
        'isRepairFailed',
        'isRequestRejected',
        'isSideEffectStoreError',
        'isResponseTooLarge',
        'isSseBufferOverflow',
        'isStoreTimeout',
        'isStreamInterrupted',
        'isUnknownPrice',
        'keyId',
        'llmChannels',
        'looksLikeWebPage',
        'markedUnfinished',
        'openAICompatible',
        'providerText',
        'quoted',
        'readRequestId',
        'retryDelay',
        'runTurns',
        'setDefaultAdmission',
        'setDefaultRetryBudgets',
        'sideEffect',
        'toolLoopTurns',
        'withRepair',
      ].sort(),
    )
  })

  it('has one guard per error it can throw, and no error class to instanceof (but the one the gateway raises and the one a store of your own may throw)', () => {
    const guards = Object.keys(llm).filter((name) => /^is[A-Z]/.test(name))
    expect(guards).toHaveLength(17)
    const classes = Object.keys(llm).filter((name) => /^[A-Z]\w*Error$/.test(name))
    expect(classes).toEqual(['SseBufferOverflowError', 'StoreTimeoutError'])
  })
})
