import { Deadline, ManualClock } from '@hourglass/core'
import { createFetch } from '@hourglass/fetch'
import { reply } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import { useFakes, user } from './support/fakes.js'

const fakes = useFakes()
const closing: Array<{ close(): Promise<unknown> }> = []
afterEach(async () => {
  await Promise.all(closing.splice(0).map((item) => item.close()))
})

/**
 * An attempt @hourglass/fetch refuses before anything leaves — the deadline
 * under its `minBudgetMs`, or the caller's signal aborted by the time the
 * request is handed on — is recorded `sent: false`: it was no request to the
 * provider, and its ~0 ms is no provider's latency.
 */
describe('attempts refused before they left are sent: false', () => {
  const setup = async () => {
    const fake = await fakes.start({ dialect: 'openai' })
    fake.enqueue(reply.text('ok'))
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'gpt-4o' }),
    )
    return { fake, model }
  }

  it('a stream whose deadline has under fetch’s minBudgetMs left', async () => {
    const { fake, model } = await setup()
    const records: AttemptRecord[] = []
    using deadline = Deadline.after(2, { clock: new ManualClock() })
    const stream = callModel({
      models: [model],
      request: { messages: [user('hi')], maxTokens: 8, stream: true },
      deadline,
      limits: { admission: false },
      retry: { budgets: false },
      onAttempt: (r) => records.push(r),
    })
    await expect(stream.result).rejects.toThrow()
    expect(fake.requests).toHaveLength(0)
    expect(records.map((r) => [r.errorKind, r.sent])).toEqual([['deadline_exceeded', false]])
  })

  it('a fetch of yours: judged by its own minBudgetMs, not the default', async () => {
    const fake = await fakes.start({ dialect: 'openai' })
    const fetch = createFetch({ minBudgetMs: 50 })
    closing.push(fetch)
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'gpt-4o', fetch }),
    )
    const records: AttemptRecord[] = []
    // 30 ms left: above the default 5, under this fetch's 50.
    using deadline = Deadline.after(30, { clock: new ManualClock() })
    const call = callModel({
      models: [model],
      request: { messages: [user('hi')], maxTokens: 8 },
      deadline,
      limits: { admission: false },
      retry: { budgets: false },
      onAttempt: (r) => records.push(r),
    })
    await expect(call).rejects.toThrow()
    expect(fake.requests).toHaveLength(0)
    expect(records.map((r) => [r.errorKind, r.sent])).toEqual([['deadline_exceeded', false]])
  })

  it('a call whose caller aborted after the loop’s check, before the request was handed on', async () => {
    const { fake, model } = await setup()
    const records: AttemptRecord[] = []
    const controller = new AbortController()
    const call = callModel({
      models: [model],
      request: { messages: [user('hi')], maxTokens: 8 },
      signal: controller.signal,
      limits: { admission: false },
      retry: { budgets: false },
      onAttempt: (r) => records.push(r),
    }).catch((e: unknown) => e)
    // callModel has checked the signal and awaits admission (none here) when it returns.
    controller.abort(new Error('gone'))
    expect(((await call) as Error).message).toBe('gone')
    expect(fake.requests).toHaveLength(0)
    expect(records.map((r) => [r.errorKind, r.sent])).toEqual([['aborted', false]])
  })

  it('an attempt the deadline ends in flight stays sent', async () => {
    const fake = await fakes.start({ dialect: 'openai' })
    fake.enqueue(reply.hang())
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'gpt-4o' }),
    )
    const clock = new ManualClock()
    const records: AttemptRecord[] = []
    using deadline = Deadline.after(1_000, { clock })
    const call = callModel({
      models: [model],
      request: { messages: [user('hi')], maxTokens: 8 },
      deadline,
      limits: { admission: false },
      retry: { budgets: false },
      onAttempt: (r) => records.push(r),
    }).catch((e: unknown) => e)
    await expect.poll(() => fake.requests.length).toBe(1)
    clock.advance(1_000)
    await call
    expect(records.map((r) => [r.errorKind, r.sent])).toEqual([['deadline_exceeded', undefined]])
  })
})
