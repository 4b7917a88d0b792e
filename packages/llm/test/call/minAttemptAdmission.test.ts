import { Deadline } from '@hourglass/core'
import { openAIErrors } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { Admission } from '../../src/admission/Admission.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import { isRateLimited, type RateLimitedError } from '../../src/errors/RateLimitedError.js'
import { decideRetry } from '../../src/retry/decideRetry.js'
import { drive, WaitClock } from '../support/waitClock.js'
import { useFakes, user } from './support/fakes.js'

const fakes = useFakes()
const request = { messages: [user('hi')], maxTokens: 16 }

describe('retry.minAttemptMs bounds admission’s cooldown wait as it bounds a retry’s', () => {
  it('a call arriving during a cooldown that would leave less than minAttemptMs is refused at once, nothing sent', async () => {
    const clock = new WaitClock()
    const admission = new Admission({ clock, staggerMs: 0 })
    const fake = await fakes.start({ dialect: 'openai' })
    const adapter = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-1', model: 'gpt-4o' }),
    )
    // A 429 asking for 2 s: the provider cools for 2 s.
    fake.enqueue(openAIErrors.rateLimited({ retryAfterS: 2 }))
    await callModel({
      models: [adapter],
      request,
      retry: { maxAttempts: 1 },
      limits: { admission },
    }).catch(() => {})
    expect(fake.requests).toHaveLength(1)

    // 4 s left, 3 s needed per attempt: a 2 s wait leaves 2 s, too little.
    const records: AttemptRecord[] = []
    const startedAt = clock.now()
    const [settled] = await drive(clock, [
      callModel({
        models: [adapter],
        request,
        retry: { minAttemptMs: 3000 },
        limits: { admission },
        deadline: Deadline.after(4000, { clock }),
        onAttempt: (r) => records.push(r),
      }),
    ])
    expect(settled?.status).toBe('rejected')
    const error = (settled as PromiseRejectedResult).reason
    expect(isRateLimited(error)).toBe(true)
    expect((error as RateLimitedError).reason).toMatch(/4000 ms left, 3000 ms needed/)
    expect(clock.now() - startedAt).toBe(0) // not waited
    expect(records).toEqual([])
    expect(fake.requests).toHaveLength(1)
  })

  it('a cooldown that leaves minAttemptMs is still waited for', async () => {
    const clock = new WaitClock()
    const admission = new Admission({ clock, staggerMs: 0 })
    const fake = await fakes.start({ dialect: 'openai' })
    const adapter = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-1', model: 'gpt-4o' }),
    )
    fake.enqueue(openAIErrors.rateLimited({ retryAfterS: 2 }))
    await callModel({
      models: [adapter],
      request,
      retry: { maxAttempts: 1 },
      limits: { admission },
    }).catch(() => {})
    const [settled] = await drive(clock, [
      callModel({
        models: [adapter],
        request,
        retry: { minAttemptMs: 3000 },
        limits: { admission },
        deadline: Deadline.after(5500, { clock }),
      }),
    ])
    expect(settled?.status).toBe('fulfilled')
    expect(fake.requests).toHaveLength(2)
  })

  it('a retry wait refused for minAttemptMs says so, not that the wait is longer than the time left', () => {
    const decision = decideRetry({
      error: {
        kind: 'rate_limited',
        retryable: true,
        status: 429,
        message: 'slow down',
        retryAfterMs: 2000,
      },
      attempt: 1,
      remainingMs: 3996,
      minAttemptMs: 3000,
      random: () => 0,
    })
    expect(decision).toMatchObject({
      action: 'fail',
      why: 'no-budget',
      reason:
        'rate_limited (HTTP 429): server-requested wait of 2000 ms leaves 1996 ms of the 3996 ms left, less than retry.minAttemptMs (3000 ms); not slept',
    })
  })
})
