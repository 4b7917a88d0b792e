import { Deadline, ManualClock } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { Admission } from '../../src/admission/Admission.js'
import { ProviderLimits } from '../../src/admission/ProviderLimits.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import { useFakes, user } from '../call/support/fakes.js'

const fakes = useFakes()
const request = { messages: [user('hi')], maxTokens: 16 }

/**
 * An attempt the HTTP client refused to send (here: a closed adapter's
 * client) reached no provider: the RPM share admission counted for it goes
 * back to the window, so the provider's next real request still goes. It
 * stayed counted until the window ended, and a one-request window refused
 * that request ("the RPM window resets in …").
 */
describe('an attempt refused by the sender gives its RPM share back', () => {
  it('a closed adapter’s attempt takes no share of the window: the next request to that provider goes', async () => {
    const fake = await fakes.start({ dialect: 'openai' })
    const admission = new Admission({
      staggerMs: 0,
      logger: { warn: () => {} },
      limits: new ProviderLimits({ limits: { openai: { rpm: 1 } }, logger: { warn: () => {} } }),
    })
    const closed = openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-1', model: 'gpt-4o' })
    await closed.close()
    const open = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-1', model: 'gpt-4o' }),
    )
    const refused = await callModel({
      models: [closed],
      request,
      retry: { budgets: false },
      limits: { admission },
    }).then(
      () => undefined,
      (error: unknown) => error,
    )
    expect(refused).toBeInstanceOf(Error)
    expect(fake.requests).toHaveLength(0)

    const answer = await callModel({
      models: [open],
      request,
      retry: { budgets: false },
      limits: { admission },
    })
    expect(answer.text).toBe('Hello from the fake provider.')
    expect(fake.requests).toHaveLength(1)
  })

  /**
   * An attempt whose deadline was under fetch's `minBudgetMs` (5 ms) once
   * admitted is refused by the HTTP client unsent: its record said
   * `sent: false`, but its RPM share stayed counted, so with `rpm: 1` the
   * next call to a provider that had seen no request was refused
   * (`RateLimitedError`, "the RPM window resets in …") — or, without a
   * deadline, waited out the minute.
   */
  it.each([false, true])(
    'an attempt the deadline stopped before it left (stream: %s) gives its RPM share back',
    async (stream) => {
      const fake = await fakes.start({ dialect: 'openai' })
      const admission = new Admission({
        staggerMs: 0,
        logger: { warn: () => {} },
        limits: new ProviderLimits({ limits: { openai: { rpm: 1 } }, logger: { warn: () => {} } }),
      })
      const model = fakes.adapter(
        openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-1', model: 'gpt-4o' }),
      )
      // 3 ms left on a clock that stands still: under fetch's 5 ms minimum.
      using deadline = Deadline.after(3, { clock: new ManualClock(1_000) })
      const records: AttemptRecord[] = []
      const options = {
        models: [model],
        deadline,
        retry: { budgets: false as const },
        limits: { admission },
        onAttempt: (record: AttemptRecord) => records.push(record),
      }
      const call = stream
        ? callModel({ ...options, request: { ...request, stream: true } }).result
        : callModel({ ...options, request })
      const stopped = await call.then(
        () => undefined,
        (error: unknown) => error,
      )
      expect((stopped as { code?: unknown }).code).toBe('DEADLINE_EXCEEDED')
      expect(records.map((r) => r.sent)).toEqual([false])
      expect(fake.requests).toHaveLength(0)

      // Bounded, so a share still counted fails at once (the window resets past it).
      using next = Deadline.after(30_000)
      const answer = await callModel({
        models: [model],
        request,
        deadline: next,
        retry: { budgets: false },
        limits: { admission },
      })
      expect(answer.text).toBe('Hello from the fake provider.')
      expect(fake.requests).toHaveLength(1)
    },
  )
})
