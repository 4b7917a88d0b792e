import { ClientClosedError, Deadline, runWithDeadline } from '@hourglass/core'
import { openAIErrors, type ProviderReply, reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { Admission } from '../../src/admission/Admission.js'
import type { CallModelOptions } from '../../src/call/CallModelOptions.js'
import { callModel } from '../../src/call/callModel.js'
import { WaitClock } from '../support/waitClock.js'
import { useFakes, user } from './support/fakes.js'

// Dark mode (express's `deadline({ mode: 'observe' })`) observes the
// deadline's expiry only; a client that leaves cancels it, and the work for
// it stops in every mode. Before, a callModel under a cancelled dark-mode
// deadline (taken from the context, no signal of its own) kept the
// provider's paid generation running to its end: fetch ignored observe
// deadlines, their cancel included.

const fakes = useFakes()

/** A provider that takes 30 s to start its answer: only the client's departure ends it sooner. */
async function slowProvider() {
  const fake = await fakes.start({ dialect: 'openai' })
  fake.setReply(reply.text('a paid answer', { latencyMs: 30_000 }))
  const model = fakes.adapter(
    openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'gpt-4o' }),
  )
  return { fake, model }
}

describe('a cancelled dark-mode deadline stops the model call', () => {
  it.each([
    ['a whole answer', false],
    ['a stream', true],
  ])(
    '%s, deadline from the context: the provider sees the client go, the call rejects with the reason',
    async (_, stream) => {
      const { fake, model } = await slowProvider()
      const deadline = Deadline.after(60_000, { observe: true })
      const pending = runWithDeadline(deadline, () =>
        stream
          ? callModel({
              models: [model],
              request: { messages: [user('hi')], maxTokens: 16, stream: true },
            }).result
          : callModel({ models: [model], request: { messages: [user('hi')], maxTokens: 16 } }),
      )
      await fake.waitForRequests(1)
      const reason = new ClientClosedError()
      deadline.cancel(reason)

      await expect(pending).rejects.toBe(reason)
      await expect.poll(() => fake.requests[0]?.outcome).toBe('client-closed')
      expect(fake.requests).toHaveLength(1)
      expect(fake.paidGenerations).toBe(0)
    },
    3000,
  )

  it('a call under a dark-mode deadline already cancelled sends nothing', async () => {
    const { fake, model } = await slowProvider()
    const deadline = Deadline.after(60_000, { observe: true })
    const reason = new ClientClosedError()
    deadline.cancel(reason)

    await expect(
      callModel({ models: [model], request: { messages: [user('hi')], maxTokens: 16 }, deadline }),
    ).rejects.toBe(reason)
    expect(fake.requests).toHaveLength(0)
  })
})

describe("llm's own waits end at the cancel of a dark-mode deadline", () => {
  it.each<[string, ProviderReply, (clock: WaitClock) => Partial<CallModelOptions>]>([
    [
      'a backoff after a 500',
      openAIErrors.serverError(),
      () => ({
        limits: { admission: false },
        retry: { budgets: false, delay: { baseDelayMs: 5000 } },
      }),
    ],
    [
      'admission’s cooldown after a 429 `retry-after: 4`',
      openAIErrors.rateLimited({ retryAfterS: 4 }),
      (clock) => ({ limits: { admission: new Admission({ clock }) }, retry: { budgets: false } }),
    ],
  ])(
    'cancelled during %s: the call rejects with the reason, nothing more is sent',
    async (_, first, options) => {
      // Never advanced: only the cancel can end the wait.
      const clock = new WaitClock()
      const fake = await fakes.start({ dialect: 'openai' })
      fake.enqueue(first)
      const model = fakes.adapter(
        openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'gpt-4o' }),
      )
      const deadline = Deadline.after(600_000, { observe: true, clock })
      const waiting = new Promise<void>((resolve) => {
        const off = clock.onChange(() => {
          if (clock.pendingWaits > 0) {
            off()
            resolve()
          }
        })
      })
      const pending = callModel(
        Object.assign(
          { models: [model], request: { messages: [user('hi')], maxTokens: 16 }, deadline },
          options(clock),
        ),
      )
      await waiting
      const reason = new ClientClosedError()
      deadline.cancel(reason)

      await expect(pending).rejects.toBe(reason)
      expect(fake.requests).toHaveLength(1)
    },
    3000,
  )
})
