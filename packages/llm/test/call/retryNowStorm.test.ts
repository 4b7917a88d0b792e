import { Deadline } from '@hourglass/core'
import { reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { callModel } from '../../src/call/callModel.js'
import { RetryBudgetRegistry } from '../../src/retry/RetryBudgetRegistry.js'
import { useFakes, user } from './support/fakes.js'

const fakes = useFakes()
const CALLS = 20

/**
 * A provider in a rate-limit storm that says "retry now": every answer a 429
 * with `Retry-After: 0` (or `retry-after-ms: 0`). Such a hint starts no
 * cooldown, so admission holds nothing back and each retry goes out at once
 * to the key that was just refused: the retry budget is what must stop the
 * storm, as it does for 5xx. It was bypassed for every rate limit (on the
 * assumption that a cooldown held the retry), and 20 calls sent 60 requests
 * in ~100 ms. No test here waits: nothing in a "retry now" storm does.
 */
async function storm(headers: Record<string, string>) {
  const fake = await fakes.start({
    dialect: 'openai',
    reply: reply.error(
      429,
      { error: { message: 'Rate limit reached', type: 'requests', code: 'rate_limit_exceeded' } },
      headers,
    ),
  })
  const model = fakes.adapter(
    openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'gpt-4o-mini' }),
  )
  const budgets = new RetryBudgetRegistry()
  const deadlines = Array.from({ length: CALLS }, () => Deadline.after(30_000))
  const results = await Promise.allSettled(
    deadlines.map((deadline, i) =>
      callModel({
        models: [model],
        request: { messages: [user(`question ${i}`)], maxTokens: 16 },
        deadline,
        retry: { maxAttempts: 3, budgets },
      }),
    ),
  )
  for (const deadline of deadlines) deadline.dispose()
  return { fake, results, bucket: budgets.forProvider(model) }
}

describe('a 429 storm whose provider says "retry now"', () => {
  for (const [label, headers] of [
    ['Retry-After: 0', { 'retry-after': '0' }],
    ['retry-after-ms: 0', { 'retry-after-ms': '0' }],
  ] as const) {
    it(`${label}: the retry budget bounds the retries (not ${CALLS} × 3 requests)`, async () => {
      const { fake, results, bucket } = await storm(headers)
      expect(results.every((r) => r.status === 'rejected')).toBe(true)
      // A default bucket (10 tokens, retries while more than half is left)
      // lets about 5 retries through, whatever the order the 429s come back in.
      const retries = fake.requests.length - CALLS
      expect(retries, `${fake.requests.length} requests for ${CALLS} calls`).toBeLessThanOrEqual(10)
      expect(bucket.canRetry()).toBe(false)
    })
  }

  it('a wait hint still lets every call wait behind the cooldown, ungated (the control)', async () => {
    // One second: the calls wait behind the cooldown, then one probe asks;
    // the bucket is not what holds them back. Bounded by their deadlines.
    const fake = await fakes.start({
      dialect: 'openai',
      reply: reply.error(
        429,
        { error: { message: 'Rate limit reached', type: 'requests', code: 'rate_limit_exceeded' } },
        { 'retry-after': '1' },
      ),
    })
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'gpt-4o-mini' }),
    )
    // Too short for the 1 s cooldown: each call is refused by admission, nothing more is sent.
    using deadline = Deadline.after(300)
    const results = await Promise.allSettled(
      Array.from({ length: CALLS }, (_, i) =>
        callModel({
          models: [model],
          request: { messages: [user(`question ${i}`)], maxTokens: 16 },
          deadline,
        }),
      ),
    )
    expect(results.every((r) => r.status === 'rejected')).toBe(true)
    expect(fake.requests.length).toBeLessThanOrEqual(CALLS)
  })
})
