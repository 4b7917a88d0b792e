import { Deadline } from '@hourglass/core'
import { openAIErrors, reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { Admission } from '../../src/admission/Admission.js'
import { ProviderLimits } from '../../src/admission/ProviderLimits.js'
import { CostBudget } from '../../src/budget/CostBudget.js'
import { estimatePromptTokens } from '../../src/budget/estimatePromptTokens.js'
import { callModel } from '../../src/call/callModel.js'
import { isBudgetExceeded } from '../../src/errors/BudgetExceededError.js'
import { useFakes, user } from '../call/support/fakes.js'
import { WaitClock } from '../support/waitClock.js'

const fakes = useFakes()
// $1 per output token, prompts free: a call with maxTokens 1 is estimated at $1.
const prices = {
  a: { inputPerMTok: 0, outputPerMTok: 1_000_000 },
  b: { inputPerMTok: 0, outputPerMTok: 1_000_000 },
}
const request = { messages: [user('Hi')], maxTokens: 1 }
/** What one request weighs against a TPM limit (admission's estimate). */
const weight = estimatePromptTokens(request) + request.maxTokens

/** Resolves once something waits on `clock` (a call held in admission's line). */
function waiting(clock: WaitClock): Promise<void> {
  return new Promise((resolve) => {
    const off = clock.onChange(() => {
      if (clock.pendingWaits > 0) {
        off()
        resolve()
      }
    })
  })
}

describe('a permit the cost budget refuses after admission gives its RPM/TPM share back', () => {
  it.each([
    ['rpm', { rpm: 2 }],
    ['tpm', { tpm: 2 * weight }],
  ] as const)(
    'a call refused by the budget once admitted takes no %s share: the next real request still goes',
    async (_, limit) => {
      const clock = new WaitClock()
      const admission = new Admission({
        clock,
        staggerMs: 0,
        logger: { warn: () => {} },
        // The window is two requests (or their tokens): one is the 429 below.
        limits: new ProviderLimits({ limits: { openai: limit }, logger: { warn: () => {} } }),
      })
      const fakeA = await fakes.start({ dialect: 'openai', reply: reply.text('from a') })
      const fakeB = await fakes.start({
        dialect: 'openai',
        reply: reply.text('from b', { usage: { inputTokens: 1, outputTokens: 1 } }),
      })
      const a = fakes.adapter(
        openAICompatible({ baseURL: fakeA.baseURL, apiKey: 'sk-a', model: 'a' }),
      )
      const b = fakes.adapter(
        openAICompatible({ baseURL: fakeB.baseURL, apiKey: 'sk-b', model: 'b', name: 'other' }),
      )
      // Model `a` cools for 3 s after a 429 (the window's first request).
      fakeA.enqueue(openAIErrors.rateLimited({ retryAfterS: 3 }))
      await callModel({ models: [a], request, retry: { maxAttempts: 1 }, limits: { admission } })
        .then(() => expect.unreachable())
        .catch(() => {})
      // A call on a $1.5 budget waits in `a`'s line (the budget affords its $1 then)…
      const budget = new CostBudget({ limitUsd: 1.5, prices })
      const queued = waiting(clock)
      const refusedCall = callModel({ models: [a], request, limits: { admission, budget } })
      await queued
      // …while another provider spends $1 of it: once admitted, $1 more no longer fits.
      expect((await callModel({ models: [b], request, limits: { admission, budget } })).text).toBe(
        'from b',
      )
      clock.advance(3000)
      const refused = await refusedCall.catch((e: unknown) => e)
      expect(isBudgetExceeded(refused)).toBe(true)
      expect(fakeA.requests).toHaveLength(1)
      // Nothing was sent for it, so the window's second request (or its
      // tokens) is still there: a call that cannot wait a minute goes now.
      using deadline = Deadline.after(5_000, { clock })
      const answer = await callModel({ models: [a], request, deadline, limits: { admission } })
      expect(answer.text).toBe('from a')
      expect(fakeA.requests).toHaveLength(2)
    },
  )
})
