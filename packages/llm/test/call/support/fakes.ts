import {
  type FakeProvider,
  type FakeProviderOptions,
  type ProviderDialect,
  startFakeProvider,
} from '@hourglass/testkit'
import { afterEach } from 'vitest'
import { anthropic } from '../../../src/adapters/anthropic.js'
import { gemini } from '../../../src/adapters/gemini.js'
import type { ModelAdapter } from '../../../src/adapters/ModelAdapter.js'
import { openAICompatible } from '../../../src/adapters/openAICompatible.js'
import { setDefaultAdmission } from '../../../src/admission/defaultAdmission.js'
import { setDefaultRetryBudgets } from '../../../src/retry/defaultRetryBudgets.js'
import type { RetryDelayOptions } from '../../../src/retry/retryDelay.js'

/** Waits a test can afford: 10 ms backoff steps and overload floors, real jitter kept. */
export const FAST_RETRIES: RetryDelayOptions = {
  baseDelayMs: 10,
  maxDelayMs: 100,
  overloadFloorMs: 10,
  overloadJitterMs: 10,
}

/**
 * Starts fake providers and adapters that are closed after each test, so no
 * socket or timer outlives the test that made it. The process-wide default
 * admission and retry budgets are dropped after each test too: every test
 * starts with the defaults a fresh process gets.
 */
export function useFakes() {
  const open: Array<{ close(): Promise<void> }> = []
  afterEach(async () => {
    await Promise.all(open.splice(0).map((item) => item.close()))
    setDefaultAdmission(undefined)
    setDefaultRetryBudgets(undefined)
  })
  return {
    async start(options: FakeProviderOptions = {}): Promise<FakeProvider> {
      const fake = await startFakeProvider(options)
      open.push(fake)
      return fake
    },
    adapter<T extends ModelAdapter>(adapter: T): T {
      open.push(adapter)
      return adapter
    },
    /** An adapter for `model` at a fake of `dialect` (Anthropic, Gemini, or OpenAI's wire for the rest). */
    adapterFor(dialect: ProviderDialect, baseURL: string, model: string): ModelAdapter {
      const options = { baseURL, apiKey: 'sk', model }
      return this.adapter(
        dialect === 'anthropic'
          ? anthropic(options)
          : dialect === 'gemini'
            ? gemini(options)
            : openAICompatible(options),
      )
    },
  }
}

export const user = (text: string) => ({ role: 'user' as const, content: text })
