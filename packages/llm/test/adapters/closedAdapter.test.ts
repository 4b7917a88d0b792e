import { ManualClock } from '@hourglass/core'
import { reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import { llmChannels } from '../../src/channels.js'
import {
  isModelUnavailable,
  type ModelUnavailableError,
} from '../../src/errors/ModelUnavailableError.js'
import { RetryBudgetRegistry } from '../../src/retry/RetryBudgetRegistry.js'
import { FAST_RETRIES, useFakes, user } from '../call/support/fakes.js'

const fakes = useFakes()
const request = { messages: [user('hi')], maxTokens: 16 }

describe('a call on a closed adapter is refused as nothing sent, not retried as a network failure', () => {
  it('goes to the next model at once, spends no retry-budget token, and its record says sent: false', async () => {
    const fake = await fakes.start({ dialect: 'openai' })
    const backupFake = await fakes.start({ dialect: 'openai' })
    // Replaced on a config reload while a call still holds it.
    const old = openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-1', model: 'gpt-4o' })
    await old.close()
    const backup = fakes.adapter(
      openAICompatible({
        baseURL: backupFake.baseURL,
        apiKey: 'sk-2',
        model: 'gpt-4o-mini',
        name: 'backup',
      }),
    )
    const budgets = new RetryBudgetRegistry()
    const records: AttemptRecord[] = []
    const published: Array<{ sent?: false | undefined }> = []
    const listen = (message: unknown) => published.push(message as { sent?: false | undefined })
    llmChannels.attempt.subscribe(listen)
    try {
      const answer = await callModel({
        models: [old, backup],
        request,
        retry: { maxAttempts: 3, delay: FAST_RETRIES, budgets },
        limits: { admission: false },
        onAttempt: (r) => records.push(r),
      })
      expect(answer.text).toBe('Hello from the fake provider.')
    } finally {
      llmChannels.attempt.unsubscribe(listen)
    }
    expect(records.map((r) => [r.model, r.errorKind, r.decision, r.sent])).toEqual([
      ['gpt-4o', 'network', 'fallback', false],
      ['gpt-4o-mini', undefined, 'success', undefined],
    ])
    expect(records[0]?.reason).toMatch(/not retryable/)
    expect(published[0]?.sent).toBe(false)
    expect(fake.requests).toHaveLength(0)
    // The provider+baseURL's budget, shared with live adapters there, is whole.
    const fresh = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-1', model: 'gpt-4o' }),
    )
    expect(budgets.forProvider(fresh).tokens).toBe(budgets.forProvider(backup).tokens)
  })

  it('a live adapter on the same endpoint still retries a transient 500 after calls on the closed one', async () => {
    const fake = await fakes.start({ dialect: 'openai' })
    const old = openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-1', model: 'gpt-4o' })
    await old.close()
    const budgets = new RetryBudgetRegistry()
    for (let i = 0; i < 5; i++) {
      await callModel({
        models: [old],
        request,
        retry: { maxAttempts: 3, delay: FAST_RETRIES, budgets },
        limits: { admission: false },
      }).catch(() => {})
    }
    const fresh = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-1', model: 'gpt-4o' }),
    )
    fake.enqueue({ kind: 'error', status: 500, body: { error: { message: 'boom' } } })
    const records: AttemptRecord[] = []
    const answer = await callModel({
      models: [fresh],
      request,
      retry: { maxAttempts: 3, delay: FAST_RETRIES, budgets },
      limits: { admission: false },
      onAttempt: (r) => records.push(r),
    })
    expect(answer.text).toBe('Hello from the fake provider.')
    expect(records.map((r) => [r.status, r.decision])).toEqual([
      [500, 'retry'],
      [200, 'success'],
    ])
  })

  it('while a close waits for a request in flight, a new call fails at once with one attempt', async () => {
    const clock = new ManualClock()
    const fake = await fakes.start({
      dialect: 'openai',
      clock,
      reply: reply.text('slow', { latencyMs: 1000 }),
    })
    const adapter = openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-1', model: 'gpt-4o' })
    const inFlight = callModel({ models: [adapter], request, limits: { admission: false } })
    await fake.waitForRequests(1)
    const closed = adapter.close()
    const records: AttemptRecord[] = []
    const error = await callModel({
      models: [adapter],
      request,
      retry: { maxAttempts: 3, delay: FAST_RETRIES },
      limits: { admission: false },
      onAttempt: (r) => records.push(r),
    }).catch((e: unknown) => e)
    expect(isModelUnavailable(error)).toBe(true)
    expect(records.map((r) => [r.errorKind, r.decision, r.status, r.sent])).toEqual([
      ['network', 'fail', 0, false],
    ])
    const cause = (error as ModelUnavailableError).lastCause
    expect(cause).toMatchObject({ kind: 'network', retryable: false, status: 0 })
    expect((cause as Error).message).toMatch(/HTTP client is closed/)
    // The request in flight is answered: the close was graceful.
    clock.advance(1000)
    expect((await inFlight).text).toBe('slow')
    await closed
    expect(fake.requests).toHaveLength(1)
  })
})
